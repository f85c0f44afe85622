package continuity

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// TestSimilar is the table the similarity thresholds are chosen by: the
// rewordings a person writes of one learning, and the near misses that
// are different learnings. A wrong merge loses a learning, so the near
// misses weigh as much as the rewordings.
func TestSimilar(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		// Rewordings: the same learning.
		{"Build failed: missing go.sum", "build fails because go.sum is missing", true},
		{"flaky test in the auth module", "the auth module's test is flaky", true},
		{"Caching the templates breaks hot reload", "cached templates break hot reload", true},
		{"postgres migrations need a lock timeout", "Postgres migrations need a lock timeout on big tables", true},
		{"The integration tests need docker running", "integration tests need Docker to be running", true},
		{"npm ci fails on node 18", "npm ci failed on Node 18", true},
		// Near misses: different learnings.
		{"postgres migrations need a lock timeout", "redis migrations need a lock timeout", false},
		{"use go 1.21", "use go 1.22", false},
		{"run go mod tidy before commit", "do not run go mod tidy before commit", false},
		{"the API paginates with cursors", "the API rate-limits with tokens", false},
		{"tests fail on CI", "lint fails on CI", false},
		{"staging deploy needs the VPN", "production deploy needs the VPN and a ticket", false},
		{"", "anything", false},
	}
	for _, c := range cases {
		got, why := similar(c.a, c.b)
		if got != c.want {
			_, wa := words(c.a)
			_, wb := words(c.b)
			t.Errorf("similar(%q, %q) = %v (%s), want %v; words %v / %v", c.a, c.b, got, why, c.want, wa, wb)
		}
		if got && why == "" {
			t.Errorf("similar(%q, %q): no reason given", c.a, c.b)
		}
		if back, _ := similar(c.b, c.a); back != got {
			t.Errorf("similar is not symmetric for %q / %q", c.a, c.b)
		}
	}
}

// TestConflict is the table of the contradiction rule for decisions: the
// pairs that choose differently for the same subject, and those that do
// not (a false positive supersedes a decision that still holds).
func TestConflict(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		// Contradictions.
		{"Use React Hook Form over Formik", "Use Formik over React Hook Form", true},
		{"use postgres for the cache", "use redis for the cache", true},
		{"tabs instead of spaces", "spaces instead of tabs", true},
		{"use tabs instead of spaces in Makefiles", "use spaces instead of tabs in makefiles", true},
		{"prefer composition over inheritance", "use inheritance", true}, // the second chooses what the first chose against
		{"use WAL", "use the rollback journal over WAL", true},
		{"We will use Postgres as the primary database", "use MySQL as the primary database", true},
		{"switch to pnpm for package management", "use npm for package management", true},
		{"always run go mod tidy before commit", "never run go mod tidy before a commit", true},
		{"use postgres 16 for the database", "use postgres 15 for the database", true},
		// Not contradictions.
		{"use postgres for the cache", "use postgres for the queue", false},
		{"use postgres for the cache", "use postgres for the cache", false},
		{"use redis for the cache", "use redis cluster for the cache", false},
		{"Use React Hook Form over Formik", "use Zod over Yup", false},
		{"use WAL", "use the rollback journal", false},
		{"prefer composition over inheritance", "prefer small functions over long ones", false},
		{"use tabs in Makefiles", "use spaces in Python files", false},
		{"Use React Hook Form over Formik", "use React Hook Form for forms", false},
		{"the API is versioned", "the API is not cached", false},
		{"use Formik over React Hook Form for the admin forms", "use React Hook Form over Formik", false}, // a subject named on one side only
	}
	for _, c := range cases {
		why := Conflict(c.a, c.b)
		if (why != "") != c.want {
			t.Errorf("Conflict(%q, %q) = %q, want a conflict: %v; choices %+v / %+v", c.a, c.b, why, c.want, parseChoice(c.a), parseChoice(c.b))
		}
		if back := Conflict(c.b, c.a); (back != "") != (why != "") {
			t.Errorf("Conflict is not symmetric for %q / %q", c.a, c.b)
		}
	}
}

// TestEachChoiceConflictMatchesEveryPair holds the grouped search to the
// double loop: the same pairs, in the same order, stopping early alike.
func TestEachChoiceConflictMatchesEveryPair(t *testing.T) {
	rng := rand.New(rand.NewSource(34))
	tools := []string{"postgres", "redis", "mysql", "formik", "react hook form", "zod"}
	subjects := []string{"", "", " for the cache", " for forms"}
	found := 0
	for round := 0; round < 300; round++ {
		cs := make([]choice, 1+rng.Intn(30))
		for i := range cs {
			text := "use " + tools[rng.Intn(len(tools))]
			if rng.Intn(2) == 0 {
				text += " over " + tools[rng.Intn(len(tools))]
			}
			cs[i] = parseChoice(text + subjects[rng.Intn(len(subjects))])
		}
		var want, got, wantFirst, gotFirst [][2]int
		for i := range cs {
			first := true
			for j := i + 1; j < len(cs); j++ {
				if choiceConflict(cs[i], cs[j]) != "" {
					want = append(want, [2]int{i, j})
					if first {
						wantFirst, first = append(wantFirst, [2]int{i, j}), false
					}
				}
			}
		}
		eachChoiceConflict(cs, func(i, j int, why string) bool {
			if why == "" {
				t.Fatal("a pair without a reason")
			}
			got = append(got, [2]int{i, j})
			return true
		})
		eachChoiceConflict(cs, func(i, j int, _ string) bool { gotFirst = append(gotFirst, [2]int{i, j}); return false })
		if !slices.Equal(want, got) || !slices.Equal(wantFirst, gotFirst) {
			t.Fatalf("round %d: every pair %v, first %v; grouped %v, first %v", round, want, wantFirst, got, gotFirst)
		}
		found += len(want)
	}
	if found < 100 {
		t.Fatalf("only %d conflicts: the test compares too little", found)
	}
}

func TestStem(t *testing.T) {
	for in, want := range map[string]string{"fails": "fail", "failed": "fail", "failing": "fail", "caches": "cach",
		"cached": "cach", "caching": "cach", "cache": "cach", "stopped": "stop", "tests": "test", "use": "use",
		"uses": "use", "status": "status", "queries": "query", "process": "process"} {
		if got := stem(in); got != want {
			t.Errorf("stem(%q) = %q, want %q", in, got, want)
		}
	}
	_ = strings.TrimSpace
}
