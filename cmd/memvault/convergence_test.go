package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/vaulttest"
)

// The convergence test (issue 15): three clones of one vault write in a
// random interleaving (remember and decide on the command line, transcript
// lines as a hook appends them, a person's hand edit of a head committed
// with git) and sync in random pairs, through a hub and directly; after a
// settle phase every clone holds the same ledger segments and heads,
// verifies, passes git fsck, and holds every acknowledged event exactly
// once. It runs with memvault sync and with plain git pull and push, the
// merge drivers registered. A failure prints the seed;
// MEMVAULT_TORTURE_SEED replays it, MEMVAULT_TORTURE_ROUNDS makes it longer.
func TestConvergence(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"sync", "git"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			rounds := tortureSize(t, "MEMVAULT_TORTURE_ROUNDS", 8, 16)
			if raceEnabled {
				rounds = min(rounds, 6)
			}
			seed := tortureSeed(t)
			convergence(t, mode, rounds, rand.New(rand.NewPCG(seed, seed^0x5eed)))
		})
	}
}

func convergence(t *testing.T, mode string, rounds int, rnd *rand.Rand) {
	s := newSyncRig(t)
	names := []string{"a", "b", "c"}
	// Each clone's person keeps notes in a section of MEMORY.md of their
	// own, and in one they all share: edits of different sections merge,
	// and lines added to the same section on two clones are both kept.
	origin := filepath.Join(s.dir, "origin", ".memory")
	s.mv(origin, "render")
	mem := filepath.Join(origin, "MEMORY.md")
	data, err := os.ReadFile(mem)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range append(names, "everyone") {
		data = append(data, fmt.Sprintf("\n## Notes of %s\n\n- started\n", n)...)
	}
	if err := os.WriteFile(mem, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s.git(origin, "commit", "-q", "-a", "-m", "notes sections")
	s.git(origin, "push", "-q", s.hub, "main")
	clones := map[string]string{}
	for _, n := range names {
		clones[n] = s.clone(n)
		if mode == "git" {
			s.mv(clones[n], "install", "git", "--vault")
		}
	}
	// Each clone knows the others by name, for syncs in pairs.
	for _, n := range names {
		for _, m := range names {
			if n != m {
				s.git(clones[n], "remote", "add", m, clones[m])
			}
		}
	}
	acked := map[string]string{}   // event id → text
	var handEdits []string         // lines people added to MEMORY.md
	prompts := map[string]string{} // hook session → its prompt
	record := func(out string, text string) {
		id := strings.TrimSpace(out)
		if !strings.HasPrefix(id, "e_") {
			t.Fatalf("no event id in %q", out)
		}
		acked[id] = text
	}
	n := 0
	write := func(clone string) {
		root := clones[clone]
		n++
		text := fmt.Sprintf("%s wrote %d", clone, n)
		switch rnd.IntN(5) {
		case 0:
			record(s.mv(root, "remember", text), text)
		case 1:
			out := s.mv(root, "decide", "--json", "--decision", text, "--rationale", "the test")
			var res struct {
				Events []struct {
					ID   string `json:"id"`
					Kind string `json:"kind"`
				} `json:"events"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("decide --json: %v\n%s", err, out)
			}
			for _, ev := range res.Events {
				if ev.Kind == "decision" {
					acked[ev.ID] = text
				}
			}
		case 2:
			s.mv(root, "transcript", "append", "--session", "s-"+clone, "--role", "user", text)
		case 4:
			// A Claude Code session: a prompt (stored at once, committed
			// later), a reply with a control line, its end.
			session := fmt.Sprintf("cc-%s-%d", clone, n)
			cwd := filepath.Dir(root)
			s.hook(root, "claude-code", "UserPromptSubmit", map[string]any{"session_id": session,
				"transcript_path": "", "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": text})
			s.hook(root, "claude-code", "Stop", map[string]any{"session_id": session, "transcript_path": "",
				"cwd": cwd, "hook_event_name": "Stop", "last_assistant_message": "NEXT: follow up on " + text})
			s.hook(root, "claude-code", "SessionEnd", map[string]any{"session_id": session, "transcript_path": "",
				"cwd": cwd, "hook_event_name": "SessionEnd", "reason": "other"})
			prompts[session] = text
		case 3:
			// A person adds a line to their section of MEMORY.md and
			// commits it.
			p := filepath.Join(root, "MEMORY.md")
			data, _ := os.ReadFile(p)
			section := clone
			if rnd.IntN(2) == 0 {
				section = "everyone"
			}
			handEdits = append(handEdits, text)
			mark := "## Notes of " + section + "\n\n"
			i := strings.Index(string(data), mark)
			if i < 0 {
				t.Fatalf("%s: MEMORY.md lost the section %q:\n%s", clone, mark, data)
			}
			i += len(mark)
			data = []byte(string(data[:i]) + "- " + text + "\n" + string(data[i:]))
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			s.git(root, "add", "MEMORY.md")
			s.git(root, "commit", "-q", "-m", "hand edit: "+text)
		}
	}
	syncHub := func(clone string) {
		root := clones[clone]
		if mode == "sync" {
			s.mv(root, "sync")
			return
		}
		for attempt := 0; ; attempt++ {
			s.git(root, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
			if _, err := s.gitTry(root, "push", "-q", "origin", "main"); err == nil {
				return
			}
			if attempt == 3 {
				t.Fatalf("%s: push rejected 4 times", clone)
			}
		}
	}
	pullPeer := func(clone, peer string) {
		root := clones[clone]
		if mode == "sync" {
			s.mv(root, "sync", "--no-push", peer)
			return
		}
		s.git(root, "pull", "-q", "--no-rebase", "--no-edit", peer, "main")
	}
	for r := 0; r < rounds; r++ {
		for i := rnd.IntN(4); i >= 0; i-- {
			write(names[rnd.IntN(3)])
		}
		x, y := names[rnd.IntN(3)], names[rnd.IntN(3)]
		if x != y && rnd.IntN(2) == 0 {
			pullPeer(x, y)
		} else {
			syncHub(x)
			if x != y {
				syncHub(y)
			}
		}
	}
	// Settle: every clone syncs with the hub twice round, so the last
	// merge reaches everyone as a fast-forward.
	for range 2 {
		for _, c := range names {
			syncHub(c)
		}
	}
	for _, c := range names {
		syncHub(c)
	}
	s.converged(clones["a"], clones["b"], clones["c"])
	want := vaultContent(t, clones["a"])
	for _, c := range names[1:] {
		got := vaultContent(t, clones[c])
		if got != want {
			t.Errorf("%s and a differ:\n%s\n---\n%s", c, got, want)
		}
	}
	// Every acknowledged event is there exactly once, in every clone.
	for _, c := range names {
		ids := map[string]int{}
		for _, line := range strings.Split(s.mv(clones[c], "ledger", "--json"), "\n") {
			if i := strings.Index(line, `"id": "`); i >= 0 {
				ids[strings.Trim(line[i+7:], `",`)]++
			}
		}
		for id, text := range acked {
			if ids[id] != 1 {
				t.Errorf("%s: event %s (%q) is there %d times", c, id, text, ids[id])
			}
		}
	}
	// Every prompt a hook stored is in every clone's transcript of its
	// session.
	for _, c := range names {
		for session, text := range prompts {
			if out := s.mv(clones[c], "transcript", "show", "--session", session); !strings.Contains(out, text) {
				t.Errorf("%s: session %s lost its prompt %q:\n%s", c, session, text, out)
			}
		}
	}
	// Every line a person added to MEMORY.md survived every merge and
	// every render, once.
	for _, c := range names {
		data, err := os.ReadFile(filepath.Join(clones[c], "MEMORY.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range handEdits {
			if n := strings.Count(string(data), "- "+text+"\n"); n != 1 {
				t.Errorf("%s: the hand edit %q is in MEMORY.md %d times:\n%s", c, text, n, data)
			}
		}
	}
	t.Logf("%d rounds, %d acknowledged events, %d hand edits, %d hook sessions", rounds, len(acked), len(handEdits), len(prompts))
}

func (s *syncRig) gitTry(dir string, args ...string) (string, error) {
	return vaulttest.Git{Dir: dir, Env: vaulttest.Sandbox(s.home)}.Try(args...)
}

// vaultContent lists the ledger segments and heads of a vault with a hash
// of each: what must be identical across converged clones.
func vaultContent(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(rel, ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(rel, "ledger/") || strings.HasPrefix(rel, "threads/") || rel == "MEMORY.md" || rel == "CONTINUITY.md" {
			data, _ := os.ReadFile(p)
			lines = append(lines, fmt.Sprintf("%s %d %x", rel, len(data), sha256.Sum256(data)))
		}
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
