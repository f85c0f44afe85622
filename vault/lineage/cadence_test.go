package lineage

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
)

// clockVault is a test vault whose clock the test sets.
func clockVault(t *testing.T) (*vault.Vault, *time.Time) {
	t.Helper()
	v := testvault.New(t)
	now := new(time.Time)
	v.Clock = func() time.Time { return *now }
	return v, now
}

// daySession stores a session whose messages are at, one minute apart from
// at, the assistant's reply holding lines (control lines), and summarises
// it with the clock at the last message.
func daySession(t *testing.T, v *vault.Vault, now *time.Time, s string, at time.Time, lines ...string) *node.Node {
	t.Helper()
	ref := transcript.Ref{Agent: v.Config.Agent, Session: s}
	*now = at.Add(time.Minute)
	_, err := v.Update(vault.TxOptions{Session: s}, func(tx *vault.Tx) error {
		_, _, err := tx.AppendText(ref, []transcript.Message{
			{Role: transcript.RoleUser, Text: "work on " + s + " please, all of it", TS: at},
			{Role: transcript.RoleAssistant, Text: "Worked on " + s + ".\n" + strings.Join(lines, "\n"), TS: at.Add(time.Minute)},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := summarizeSession(t, v, ref)
	return n
}

func cadence(t *testing.T, v *vault.Vault, now time.Time) CadenceReport {
	t.Helper()
	rep, err := RunCadence(v, vault.TxOptions{Command: "test cadence"}, now)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func titles(ns []*node.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Title)
	}
	return out
}

func nodesOf(t *testing.T, v *vault.Vault, kind string) []*node.Node {
	t.Helper()
	ix, err := node.Load(v.Files())
	if err != nil {
		t.Fatal(err)
	}
	return ix.Select(node.Filter{Agent: v.Config.Agent, Kind: kind})
}

// The cadence condenses a day once it has closed, and a week once it has,
// over its day nodes; never twice; a node that comes to a condensed day
// late makes the day condensed again, one node over all of it that
// supersedes the first; "closed" is the clock the test sets.
func TestCondenseOnItsCadence(t *testing.T) {
	v, now := clockVault(t)
	wed := time.Date(2020, 1, 15, 9, 0, 0, 0, time.UTC) // ISO week 2020-W03
	s1 := daySession(t, v, now, "s1", wed)
	s2 := daySession(t, v, now, "s2", wed.Add(3*time.Hour))

	// the day is under way: nothing is due
	due, err := CondenseDue(v, v.Config.Agent, wed.Add(14*time.Hour+59*time.Minute))
	if err != nil || len(due) != 0 {
		t.Fatalf("due before midnight: %v %v", due, err)
	}
	if rep := cadence(t, v, wed.Add(14*time.Hour)); len(rep.Condensed) != 0 {
		t.Fatalf("condensed a day under way: %v", titles(rep.Condensed))
	}
	// midnight: the day is due, and condensed once
	midnight := time.Date(2020, 1, 16, 0, 0, 0, 0, time.UTC)
	due, _ = CondenseDue(v, v.Config.Agent, midnight)
	if len(due) != 1 || due[0].Label != "2020-01-15" || due[0].Kind != "day" || !due[0].End.Equal(midnight) {
		t.Fatalf("due at midnight: %+v", due)
	}
	rep := cadence(t, v, midnight)
	if len(rep.Condensed) != 1 || !slices.Equal(rep.Condensed[0].Children, sortedIDs(s1, s2)) {
		t.Fatalf("at midnight: %v", rep.Condensed)
	}
	day := rep.Condensed[0]
	if rep := cadence(t, v, midnight.Add(time.Hour)); len(rep.Condensed) != 0 {
		t.Fatalf("condensed again: %v", titles(rep.Condensed))
	}
	// a session of the 15th summarised after midnight: the day is condensed
	// again, one node over all three that supersedes the first
	late := daySession(t, v, now, "s3", wed.Add(14*time.Hour+50*time.Minute))
	*now = midnight.Add(2 * time.Hour)
	rep = cadence(t, v, *now)
	if len(rep.Condensed) != 1 || !slices.Equal(rep.Condensed[0].Children, sortedIDs(s1, s2, late)) ||
		!slices.Equal(rep.Condensed[0].Supersedes, []string{day.ID}) ||
		!strings.Contains(rep.Condensed[0].Body, "condensed before, in `"+day.ID+"`; this node takes its place") {
		t.Fatalf("the late node: %+v", rep.Condensed)
	}
	lateDay := rep.Condensed[0]
	// Thursday and Friday, then Monday: the days, then the week over them
	thu := daySession(t, v, now, "s4", midnight.Add(10*time.Hour))
	monday := time.Date(2020, 1, 20, 0, 0, 0, 0, time.UTC)
	due, _ = CondenseDue(v, v.Config.Agent, monday)
	if got := fmt.Sprint(due); !strings.Contains(got, "day 2020-01-16") || !strings.Contains(got, "week 2020-W03") || len(due) != 2 {
		t.Fatalf("due on Monday: %v", got)
	}
	if w := due[1]; !w.Start.Equal(time.Date(2020, 1, 13, 0, 0, 0, 0, time.UTC)) || !w.End.Equal(monday) {
		t.Fatalf("week %+v", w)
	}
	rep = cadence(t, v, monday)
	if len(rep.Condensed) != 2 {
		t.Fatalf("on Monday: %v", titles(rep.Condensed))
	}
	thuDay, week := rep.Condensed[0], rep.Condensed[1]
	if !slices.Equal(thuDay.Children, []string{thu.ID}) || !slices.Equal(week.Children, sortedIDs(lateDay, thuDay)) ||
		!strings.HasPrefix(week.Title, "2020-W03: 2 nodes") {
		t.Fatalf("day %v, week %v %q", thuDay.Children, week.Children, week.Title)
	}
	if rep := cadence(t, v, monday.AddDate(0, 0, 30)); len(rep.Condensed) != 0 {
		t.Fatalf("condensed again: %v", titles(rep.Condensed))
	}
	if got := len(nodesOf(t, v, node.Condensed)); got != 3 {
		t.Fatalf("%d condensed nodes count, want 3", got)
	}
	testvault.MustVerify(t, v)
}

// A closed week whose sessions end one at a time (a backfill: each
// session summarised, then the cadence run, the week long closed) keeps
// one week node that counts, and one day node a day: each late session
// makes its day and its week condensed again, superseding the nodes
// before, and the week that counts reaches every session. Run again with
// nothing new, the cadence writes nothing.
func TestClosedWeekCondensedOnceAsSessionsEnd(t *testing.T) {
	v, now := clockVault(t)
	mon := time.Date(2020, 1, 13, 9, 0, 0, 0, time.UTC) // ISO week 2020-W03
	later := time.Date(2020, 2, 3, 0, 0, 0, 0, time.UTC)
	var sessions []string
	for i, day := range []int{2, 0, 2, 4, 0} { // Wednesday, Monday, Wednesday, Friday, Monday
		s := daySession(t, v, now, fmt.Sprintf("b%d", i), mon.AddDate(0, 0, day).Add(time.Duration(i)*time.Hour))
		sessions = append(sessions, s.ID)
		rep := cadence(t, v, later)
		if len(rep.Condensed) != 2 {
			t.Fatalf("session %d: condensed %v, want its day and its week", i, titles(rep.Condensed))
		}
		ix, err := node.Load(v.Files())
		if err != nil {
			t.Fatal(err)
		}
		var weeks, days []*node.Node
		for _, n := range ix.Select(node.Filter{Agent: v.Config.Agent, Kind: node.Condensed}) {
			switch condensedPeriod(n) {
			case "week":
				weeks = append(weeks, n)
			case "day":
				days = append(days, n)
			}
		}
		if len(weeks) != 1 || weeks[0].ID != rep.Condensed[1].ID {
			t.Fatalf("session %d: %d week nodes count: %v", i, len(weeks), titles(weeks))
		}
		perDay := map[string]int{}
		for _, d := range days {
			perDay[d.Title[:10]]++
			if perDay[d.Title[:10]] > 1 {
				t.Fatalf("session %d: day %s has two nodes that count", i, d.Title[:10])
			}
		}
		var leaves []string
		var walk func(id string)
		walk = func(id string) {
			n := ix.Nodes[id]
			if n.Kind != node.Condensed {
				leaves = append(leaves, id)
			}
			for _, c := range n.Children {
				walk(c)
			}
		}
		walk(weeks[0].ID)
		slices.Sort(leaves)
		want := slices.Sorted(slices.Values(sessions))
		if !slices.Equal(leaves, want) {
			t.Fatalf("session %d: the week reaches %v, want %v", i, leaves, want)
		}
		if len(weeks[0].Supersedes) != min(i, 1) {
			t.Fatalf("session %d: the week supersedes %v", i, weeks[0].Supersedes)
		}
	}
	if rep := cadence(t, v, later.AddDate(0, 0, 7)); len(rep.Condensed) != 0 {
		t.Fatalf("condensed again: %v", titles(rep.Condensed))
	}
	if due, _ := CondenseDue(v, v.Config.Agent, later); len(due) != 0 {
		t.Fatalf("still due: %v", due)
	}
	// the first session's node drills up to its day's node that counts,
	// not to the days it superseded
	ex, err := Expand(v, sessions[0], ExpandOptions{Agent: v.Config.Agent})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := node.Load(v.Files())
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Parents) != 1 || ix.SupersededBy(ex.Parents[0].ID) != "" || len(ix.Parents[sessions[0]]) < 2 {
		t.Errorf("the first session's parents: %+v (of %v)", ex.Parents, ix.Parents[sessions[0]])
	}
	testvault.MustVerify(t, v)
}

func sortedIDs(ns ...*node.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.ID)
	}
	slices.Sort(out)
	return out
}

// A cadence run killed before its commit leaves nothing; run again it
// writes what one run writes: one node a period, the same bytes.
func TestCadenceKilledThenRunAgain(t *testing.T) {
	v, now := clockVault(t)
	wed := time.Date(2020, 1, 15, 9, 0, 0, 0, time.UTC)
	daySession(t, v, now, "s1", wed, "DECISION: use WAL for the index")
	later := time.Date(2020, 1, 21, 0, 0, 0, 0, time.UTC)
	var first []*node.Node
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		var err error
		if first, err = CondenseClosed(tx, later); err != nil {
			return err
		}
		ss, err := SelfSummarize(tx, later)
		first = append(first, ss...)
		return errors.Join(err, errors.New("killed before the commit"))
	})
	if err == nil || len(first) != 3 {
		t.Fatalf("first run: %v, %v", titles(first), err)
	}
	if got := nodesOf(t, v, ""); len(got) != 1 {
		t.Fatalf("a killed run left %d nodes", len(got))
	}
	rep := cadence(t, v, later)
	again := append(rep.Condensed, rep.SelfSummaries...)
	if len(again) != 3 {
		t.Fatalf("second run: %v", titles(again))
	}
	for i := range again {
		if again[i].ID != first[i].ID {
			t.Errorf("node %d: %s, then %s", i, first[i].ID, again[i].ID)
		}
	}
	if rep := cadence(t, v, later); len(rep.Condensed)+len(rep.SelfSummaries) != 0 {
		t.Fatal("a third run wrote")
	}
	if got := len(nodesOf(t, v, "")); got != 4 {
		t.Fatalf("%d nodes, want 4", got)
	}
	testvault.MustVerify(t, v)
}

// The self-summary: written at a day's end and at every SelfSummaryEvery
// events, never twice, citing its events; what it says is the state at
// its last event, so later events leave its bytes as they are.
func TestSelfSummaryOnItsCadence(t *testing.T) {
	v, now := clockVault(t)
	wed := time.Date(2020, 1, 15, 9, 0, 0, 0, time.UTC)
	daySession(t, v, now, "s1", wed, "COMMIT: ship the installer", "DECISION: use WAL for the index",
		"BLOCKER: the CI runner is down", `REFLECT: {"text":"I guessed the cause before reading the log"}`)
	daySession(t, v, now, "s2", wed.Add(3*time.Hour), "BLOCKER: The CI runner is down!", "LEARNED: copy before switching reads")
	if rep := cadence(t, v, wed.Add(14*time.Hour)); len(rep.SelfSummaries) != 0 {
		t.Fatalf("a self-summary before the day's end: %v", titles(rep.SelfSummaries))
	}
	thu := time.Date(2020, 1, 16, 0, 0, 0, 0, time.UTC)
	rep := cadence(t, v, thu)
	if len(rep.SelfSummaries) != 1 {
		t.Fatalf("at the day's end: %v", titles(rep.SelfSummaries))
	}
	first := rep.SelfSummaries[0]
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	var cited []string
	for _, r := range st.Rows {
		if selfCounted(r, v.Config.Agent) {
			cited = append(cited, r.ID)
			if !strings.Contains(first.Body, "- `"+r.ID+"` ") {
				t.Errorf("the self-summary does not cite %s %s", r.Kind, r.ID)
			}
		}
	}
	for _, want := range []string{
		"# Self-summary 1 of agent default\n\n6 events, 2020-01-15T09:01:00.000Z to 2020-01-15T12:01:00.000Z, up to the end of 2020-01-15.",
		"## Open commitments\n\n- `", ": ship the installer (open 3 hours, since 2020-01-15)\n",
		"## Decisions\n\n- `", ": use WAL for the index (active; recorded)\n",
		"## Learnings\n\n- `", ": copy before switching reads (active; recorded)\n",
		"## Recurring blockers\n\n- The CI runner is down!: recorded 2 times (`",
		"## Reflections\n\n- `", ": I guessed the cause before reading the log\n",
	} {
		if !strings.Contains(first.Body, want) {
			t.Errorf("the self-summary lacks %q:\n%s", want, first.Body)
		}
	}
	if first.Title != "self-summary 1: 6 events, 1 open commitments" || len(cited) != 6 {
		t.Errorf("title %q, %d events", first.Title, len(cited))
	}
	if rep := cadence(t, v, thu.Add(time.Hour)); len(rep.SelfSummaries) != 0 {
		t.Fatal("written twice")
	}
	// expand drills from the self-summary to the events it cites
	ex, err := Expand(v, first.ID, ExpandOptions{Agent: v.Config.Agent})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range ex.Rows {
		rows = append(rows, r.ID)
	}
	if !slices.Equal(rows, cited) {
		t.Errorf("expand's rows %v, want the cited %v", rows, cited)
	}

	// Thursday: the commitment is done, then 29 decisions: 30 events, a
	// self-summary at the 25th before the day is over, the rest at its end
	var lines []string
	lines = append(lines, "DONE: ship the installer")
	for i := range 29 {
		lines = append(lines, fmt.Sprintf("DECISION: choice number %d", i))
	}
	daySession(t, v, now, "s3", thu.Add(10*time.Hour), lines...)
	rep = cadence(t, v, thu.Add(12*time.Hour))
	if len(rep.SelfSummaries) != 1 || rep.SelfSummaries[0].Title != "self-summary 2: 25 events, 0 open commitments" ||
		!strings.Contains(rep.SelfSummaries[0].Body, "up to its 25-event mark") {
		t.Fatalf("at 25 events: %v", titles(rep.SelfSummaries))
	}
	rep = cadence(t, v, thu.AddDate(0, 0, 1))
	if len(rep.SelfSummaries) != 1 || rep.SelfSummaries[0].Title != "self-summary 3: 5 events, 0 open commitments" {
		t.Fatalf("at Thursday's end: %v", titles(rep.SelfSummaries))
	}
	if got := len(nodesOf(t, v, node.SelfSummary)); got != 3 {
		t.Fatalf("%d self-summaries, want 3", got)
	}

	// Made again from today's ledger, the first is the same bytes: the
	// commitment closed since is still open in it.
	st, err = v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	w := selfWindows(st, v.Config.Agent, thu.AddDate(0, 0, 9), 0)
	at := &vault.State{ByID: map[string]*vault.Row{}}
	for _, r := range st.Rows[:w[0].end+1] {
		at.Add(&vault.Row{Event: r.Event})
	}
	again := selfNode(at, v.Config.Agent, w[0])
	again.ID, again.Path = first.ID, first.Path
	full, err := node.Read(v.Files(), first)
	if err != nil {
		t.Fatal(err)
	}
	if string(again.Encode()) != string(full.Encode()) {
		t.Errorf("made again, the first self-summary differs:\n%s\n---\n%s", again.Encode(), full.Encode())
	}
	testvault.MustVerify(t, v)
}
