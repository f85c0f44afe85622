package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// canaries are secrets of shapes issue 33 found stored in clear, each
// pushed through every input path by TestEveryWriterRedacts; the needle
// is the part that must be nowhere in the vault.
var canaries = []struct{ text, needle string }{
	{"hvs.Cq7Wm2Xp9Lr4Tz8Vb1Nc5Hd3Fg6Jk0Ys2AeQ", "Cq7Wm2Xp9Lr4Tz8Vb1Nc5"},
	{"AKIAQ3EGRT6J7WXMPLE4", "Q3EGRT6J7WXMPLE4"},
	{"secret key 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", "Zq3vJ8kP2mX9rT4wL6yB1nC5"},
	{"whsec_Mx8Qp2Lr7Tz4Vb9Nc1Hd6Fg3Jk5Ys0Ae", "Mx8Qp2Lr7Tz4Vb9Nc1Hd6"},
	{"sshpass -p Sh4ssCanary9 ssh deploy@10.0.0.7", "Sh4ssCanary9"},
}

// TestEveryWriterRedacts pushes the canaries through each way text gets
// into a vault (remember, delegate, the hooks with the secret in the
// prompt and in the session id, a transcript import, a hand edit of
// MEMORY.md, executor add, export) and then searches the whole vault: the
// working files, .logs/, every git object decompressed, the reflogs and
// the commit messages, and the export's output.
func TestEveryWriterRedacts(t *testing.T) {
	t.Parallel()
	r := newRig(t, plainMemvault(t))
	var texts []string
	for _, c := range canaries {
		texts = append(texts, c.text)
	}
	secret := "notes: " + strings.Join(texts, " ; ")

	// remember, and a decision whose text names the commit
	r.run("remember", "--thread", "project:shop", secret)
	r.run("remember", "--kind", "decision", "--thread", "project:shop", secret)
	// delegate: the executor's answer is the secret (read from a file, so
	// that memvault.toml does not hold it)
	answer := filepath.Join(r.dir, "answer.txt")
	os.WriteFile(answer, []byte(secret+"\n"), 0o600)
	r.run("executor", "add", "leak", "--plain", "--", "sh", "-c", "cat >/dev/null; cat $0", answer)
	r.run("delegate", "--global", "--executor", "leak", "summarise the deploy")
	// executor add with the secret in its command: refused, nothing written
	out, err := r.cmd(context.Background(), "executor", "add", "bad", "--plain", "--", "echo", texts[0]).CombinedOutput()
	if err == nil {
		t.Errorf("executor add with a credential in memvault.toml: accepted\n%s", out)
	}
	// hooks: the prompt, the reply, and a session id that holds a token
	for _, sid := range []string{"s-canary", texts[3]} {
		r.addCCPrompt(sid, secret, 1)
		for _, ev := range []struct {
			name  string
			extra map[string]any
		}{
			{"SessionStart", map[string]any{"source": "startup"}},
			{"UserPromptSubmit", map[string]any{"prompt": secret, "prompt_id": "p1"}},
			{"Stop", map[string]any{"last_assistant_message": "DECISION: " + secret}},
			{"SessionEnd", map[string]any{"reason": "other"}},
		} {
			cmd := r.cmd(context.Background(), "hook", "claude-code", ev.name)
			cmd.Stdin = bytes.NewReader(r.payload(ev.name, sid, ev.extra))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("hook %s: %v\n%s", ev.name, err, out)
			}
		}
	}
	// a transcript import
	gen := filepath.Join(r.dir, "gen.jsonl")
	line, _ := json.Marshal(map[string]string{"id": "g1", "ts": "2026-11-22T10:00:00Z", "role": "user", "speaker": "alice", "text": secret})
	os.WriteFile(gen, append(line, '\n'), 0o600)
	r.run("transcript", "import", "--format", "generic", "--session", "s-gen", gen)
	// a hand edit of MEMORY.md, committed by the next render
	r.run("render")
	f, err := os.OpenFile(filepath.Join(r.vault, "MEMORY.md"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n## Notes\n\n- " + strings.Join(texts, "\n- ") + "\n")
	f.Close()
	r.run("render")
	// export, both formats
	exported := r.run("export", "--thread", "project:shop", "--format", "json") + r.run("export", "--thread", "project:shop")

	found := func(where string, data []byte) {
		for _, c := range canaries {
			if i := bytes.Index(data, []byte(c.needle)); i >= 0 {
				t.Errorf("%s holds %.12s…: %q", where, c.needle, data[max(0, i-120):i])
			}
		}
	}
	found("the export", []byte(exported))
	files, objects := r.everyByte(found)
	if files < 20 {
		t.Fatalf("walked %d files", files)
	}
	if !hasGit() {
		return
	}
	// Each path left its mark: the redaction happened, it did not just
	// drop the text.
	if !bytes.Contains(objects, []byte("[REDACTED:hashicorp-token]")) || !bytes.Contains(objects, []byte("[REDACTED:high-entropy-token]")) {
		t.Error("no redaction marker in the git objects: did the inputs reach the vault?")
	}
}

// everyByte gives fn everything the vault holds: each file under it (the
// working files, .logs/, .state/, .index/, .git with its reflogs, refs and
// compressed loose objects) and, with git installed, every git object
// decompressed, the reflog and every commit message. It returns how many
// files it read and the objects, for the caller's own checks.
func (r *rig) everyByte(fn func(where string, data []byte)) (files int, objects []byte) {
	r.t.Helper()
	filepath.WalkDir(r.vault, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		data, _ := os.ReadFile(p)
		fn(p, data)
		return nil
	})
	if !hasGit() {
		return files, nil
	}
	objects, err := exec.Command("git", "-C", r.vault, "cat-file", "--batch-all-objects", "--batch").Output()
	if err != nil {
		r.t.Fatal(err)
	}
	fn("a git object", objects)
	fn("the reflog", []byte(r.mustGit("reflog", "--format=%H %gs")))
	fn("a commit message", []byte(r.mustGit("log", "--all", "--format=%B")))
	return files, objects
}

// writers are the files outside tests that write text to disk or to git
// through a write call (see writeCall), each with the redaction the text
// it writes has been through. A new file that writes is a failure of
// TestWritersAreKnown until it is entered here, with its answer.
var writers = map[string]string{
	"vault/txwrite.go":                "the transaction's writes: ledger events (Tx.Append redacts), transcripts (AppendText redacts), nodes and heads (rendered from redacted events), memvault.toml (executor.Edit refuses a credential)",
	"vault/tx.go":                     "the commit (message redacted whole, commitmsg.go) and the write errors kept in .logs/ (texts of errors, no input)",
	"vault/ledger.go":                 "a torn ledger line's fragment kept in .logs/torn-*.txt: bytes of a line Tx.Append redacted",
	"vault/tjournal/tjournal.go":      "the transcript journal: part paths and sizes",
	"vault/waiting/waiting.go":        "the deferred commits' record: paths, and event texts and subjects already redacted (Tx.Append, Tx.message)",
	"vault/headjournal.go":            "the journal of head writes and .logs/heads.log: paths and hashes",
	"vault/spool.go":                  "spooled messages, redacted by the hook before they are spooled (AppendText on replay redacts again); torn records kept in .logs/",
	"vault/transcripts.go":            "transcript parts: AppendText redacts each message",
	"vault/vault.go":                  "init: fixed templates",
	"vault/gitrepo/gcrun.go":          "the mark of a running gc (.locks/gc-run): process ids and times, no text",
	"vault/gitrepo/locks.go":          "the reflog: the commit's subject, redacted by the engine",
	"vault/gitrepo/repo.go":           "loose objects: the commit's files, trees and message, redacted by the engine before the commit",
	"vault/gitrepo/merge.go":          "a merge's files and message: the clones' redacted files, a fixed message",
	"vault/repair/repair.go":          "the old ledger segments kept under .logs/: redacted events",
	"vault/lineage/importstate.go":    "an import's cursor: offsets, ids and the source's path, redacted (importbatch.go)",
	"vault/heads/headlease.go":        "a head's lease: pid and time",
	"vault/heads/headedit.go":         "a hand edit: redacted before it is written back and committed",
	"vault/node/cache.go":             "a cache of nodes, built from redacted nodes",
	"vault/fileio/beneath.go":         "the one way to write: callers redact",
	"vault/fileio/fileio.go":          "the one way to write: callers redact",
	"vault/fileio/input.go":           "reads only: a person's input file opened read-only without blocking",
	"vault/continuity/suspect.go":     "reads only: a project file opened read-only (O_NOFOLLOW) for SUSPECT's grep",
	"vault/fileio/replace_linux.go":   "the one way to write: callers redact",
	"hooks/hookstate/hooklog.go":      ".logs/hooks.log: each line redacted",
	"hooks/hookstate/jobs.go":         "the job queue: agents, hashed session keys, kinds",
	"hooks/hookstate/jobworker.go":    "the worker's lock: a pid",
	"hooks/hookstate/opensessions.go": "open sessions: hashed session keys",
	"merge/unified.go":                "a diff in memory",
}

// writeCall is a call that writes a file or a commit.
var writeCall = regexp.MustCompile(`\.(WriteAtomic|WriteFileAtomic|AppendFile|OpenFile)\(|os\.WriteFile\(|\.Repo\.Commit\(|[^.a-z](f|file|out)\.WriteString\(`)

// TestWritersAreKnown lists the files that write and fails on one that
// writers does not name, so that a new writer is looked at for redaction.
func TestWritersAreKnown(t *testing.T) {
	root := filepath.Join("..", "..")
	var seen []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case strings.HasPrefix(d.Name(), ".") && rel != ".", rel == "fixtures", strings.Contains(rel, "vaulttest"), strings.Contains(rel, "testvault"), rel == "cmd/memvault/bench":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if writeCall.Match(data) {
			seen = append(seen, rel)
			if _, ok := writers[rel]; !ok && !strings.HasPrefix(rel, "cmd/") {
				t.Errorf("%s writes (%s) and is not in writers: enter it, with how what it writes is redacted", rel, writeCall.Find(data))
			}
		}
		return nil
	})
	for w := range writers {
		if !slices.Contains(seen, w) {
			t.Errorf("writers names %s, which no longer writes", w)
		}
	}
}
