package vault

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/vaulttest"
)

// stampedVault is a vault of several segments (one per transaction), fully
// verified, so that every segment is stamped as checked.
func stampedVault(t *testing.T, n int) *Vault {
	t.Helper()
	v := newVault(t)
	v.Config.Ledger.SegmentBytes = 100 // every transaction opens a segment
	for i := range n {
		remember(t, v, fmt.Sprintf("row %d", i))
	}
	if segs, _, _ := ListSegments(v.Root); len(segs) < 3 {
		t.Fatalf("want several segments, have %d", len(segs))
	}
	mustVerify(t, v)
	if c := v.loadStamps(); len(c.stamps) == 0 || c.stamps[0].Ctime == 0 || c.stamps[0].Head == "" {
		t.Fatalf("a clean verification saved no stamps with ctime and HEAD's blob: %+v", c.stamps)
	}
	return v
}

// flipBack changes one byte of the text of the first segment's event, then
// sets the file's mtime back to what it was: same size, same mtime, same
// inode (touch -d back).
func flipBack(t *testing.T, v *Vault) string {
	t.Helper()
	segs, _, _ := ListSegments(v.Root)
	p := v.Abs(segs[0].Rel())
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	bad := bytes.Replace(data, []byte(`"text":"row 0"`), []byte(`"text":"row 8"`), 1)
	if bytes.Equal(bad, data) {
		t.Fatal("nothing to flip")
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0) // in place: the inode stays
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bad, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(p, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(p)
	if after.Size() != info.Size() || !after.ModTime().Equal(info.ModTime()) {
		t.Fatal("the edit changed the size or the mtime")
	}
	return segs[0].String()
}

func wantProblemIn(t *testing.T, what string, rep *VerifyReport, err error, file string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if rep.OK {
		t.Fatalf("%s passed a damaged ledger", what)
	}
	for _, p := range rep.Problems {
		if p.File == file {
			return
		}
	}
	t.Fatalf("%s names no problem in %s: %v", what, file, rep.Problems)
}

// A byte flipped in an old, stamped segment, its size and mtime put back,
// is found by the full verification, by the incremental one (the ctime
// moved), and by the next writer.
func TestVerifyIncrementalFindsAnEditUnderTheSameStat(t *testing.T) {
	v := stampedVault(t, 5)
	if rep, err := v.VerifyIncremental(); err != nil || !rep.OK || rep.Rechecked != 0 {
		t.Fatalf("incremental verify of an unchanged vault: %+v %v", rep, err)
	}
	file := flipBack(t, v)
	rep, err := v.Verify()
	wantProblemIn(t, "full verify", rep, err, file)
	rep, err = v.VerifyIncremental()
	wantProblemIn(t, "incremental verify", rep, err, file)
	if h, err := v.Health(); err != nil || h.OK() {
		t.Fatalf("the writers' check passed the edit: %+v %v", h, err)
	}
	rep, err = v.VerifyIncremental() // from the saved failure
	wantProblemIn(t, "incremental verify again", rep, err, file)
}

// A forged stamp file does not make a broken chain pass: neither the
// stamps saved before the damage and put back after it, nor stamps made to
// match the damaged files but signed with another key, nor a stamp file
// with its bytes edited.
func TestVerifyForgedStampsVouchForNothing(t *testing.T) {
	v := stampedVault(t, 5)
	stampPath := codec.FilePath(v.Root, verifiedFile)
	before, err := os.ReadFile(stampPath)
	if err != nil {
		t.Fatal(err)
	}
	old := v.loadStamps()
	file := flipBack(t, v)
	check := func(what string) {
		t.Helper()
		rep, err := v.VerifyIncremental()
		wantProblemIn(t, what+": incremental verify", rep, err, file)
		if h, err := v.Health(); err != nil || h.OK() {
			t.Fatalf("%s: the writers' check passed: %+v %v", what, h, err)
		}
	}

	// the clean stamps from before the damage, put back
	if err := os.WriteFile(stampPath, before, 0o600); err != nil {
		t.Fatal(err)
	}
	check("replayed stamps")

	// stamps that match the damaged files, signed with a key not the clone's
	forged := verifiedCache{stamps: old.stamps}
	segs, _, _ := ListSegments(v.Root)
	for i, s := range segs {
		cur, err := v.verifiedStampOf(s)
		if err != nil {
			t.Fatal(err)
		}
		forged.stamps[i].SegStamp, forged.stamps[i].Ctime = cur.SegStamp, cur.Ctime
		forged.stamps[i].Tip = old.stamps[i].Tip
	}
	codec.WriteFile(v.Root, verifiedFile, verifiedVersion, func(e *codec.Encoder) {
		encodeVerified(e, forged)
		e.Str(signVerified(make([]byte, 32), forged))
	})
	check("stamps signed with another key")

	// the same stamps signed with the clone's key pass: that is what the
	// incremental check trusts (docs/specs/STORAGE.md); a byte of the file
	// changed then, the signature fails again
	key := v.stampKey(false)
	codec.WriteFile(v.Root, verifiedFile, verifiedVersion, func(e *codec.Encoder) {
		encodeVerified(e, forged)
		e.Str(signVerified(key, forged))
	})
	if c := v.loadStamps(); len(c.stamps) != len(segs) {
		t.Fatal("stamps signed with the clone's key were not read")
	}
	data, _ := os.ReadFile(stampPath)
	i := bytes.Index(data, []byte("ledger/"))
	data[i+len("ledger/")] ^= 1 // a path's byte: the frame's checksum fails
	os.WriteFile(stampPath, data, 0o600)
	check("an edited stamp file")

	// the key gone: nothing is trusted
	if err := os.Remove(filepath.Join(v.Root, filepath.FromSlash(stampKeyFile))); err != nil {
		t.Fatal(err)
	}
	check("no key")

	if rep, err := v.Verify(); err != nil || rep.OK {
		t.Fatalf("full verify: %+v %v", rep, err)
	}
}

// What HEAD commits is held again when it changes under stamped
// segments: a commit of a forged segment made with git alone, the work
// tree untouched (so every stamp still matches), is found by the
// incremental verification; and a git pull that brings a new segment
// has it checked.
func TestVerifyIncrementalFollowsHEAD(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("needs git")
	}
	v := stampedVault(t, 4)
	g := vaulttest.Git{Dir: v.Root, Env: vaulttest.Sandbox(t.TempDir())}
	segs, _, _ := ListSegments(v.Root)
	first := segs[0].String()
	data, _ := os.ReadFile(v.Abs(segs[0].Rel()))
	// the first event with another text, its hash recomputed: a sound line
	firstLine, rest, _ := bytes.Cut(data, []byte("\n"))
	ev, ok, err := ParseLine(firstLine)
	if err != nil || !ok {
		t.Fatalf("first line: %v", err)
	}
	ev.Text = "row 9"
	resealed, err := ev.Seal(ev.Prev)
	if err != nil {
		t.Fatal(err)
	}
	forged := append(resealed, rest...)
	tmp := filepath.Join(t.TempDir(), "forged")
	os.WriteFile(tmp, forged, 0o600)
	blob := strings.TrimSpace(g.Run(t, "hash-object", "-w", "--no-filters", tmp))
	g.Run(t, "update-index", "--cacheinfo", "100644,"+blob+","+first)
	g.Run(t, "commit", "-q", "--no-verify", "-m", "forged in HEAD only")
	if st, _ := v.verifiedStampOf(segs[0]); !v.loadStamps().stamps[0].sameFile(st) {
		t.Fatal("the work tree's segment changed: the test needs it untouched")
	}
	rep, err := v.VerifyIncremental()
	wantProblemIn(t, "incremental verify after a commit made with git", rep, err, first)
	g.Run(t, "reset", "-q", "--soft", "HEAD~1")
	g.Run(t, "reset", "-q") // git's index back to HEAD
	if rep, err := v.VerifyIncremental(); err != nil || !rep.OK {
		t.Fatalf("incremental verify after the commit was undone: %+v %v", rep, err)
	}

	// a clone writes a broken segment and commits it; a pull brings it
	clone := filepath.Join(t.TempDir(), "clone")
	vaulttest.Git{Env: g.Env}.Run(t, "clone", "-q", v.Root, clone)
	cg := vaulttest.Git{Dir: clone, Env: g.Env}
	later := filepath.Join(clone, "ledger", "2099", "12")
	os.MkdirAll(later, 0o700)
	line := bytes.SplitAfter(data, []byte("\n"))[0]
	os.WriteFile(filepath.Join(later, "31.jsonl"), bytes.Replace(line, []byte(`"row 0"`), []byte(`"row X"`), 1), 0o600)
	cg.Run(t, "add", "ledger")
	cg.Run(t, "commit", "-q", "--no-verify", "-m", "a broken segment")
	g.Run(t, "pull", "-q", "--no-rebase", clone, strings.TrimSpace(g.Run(t, "rev-parse", "--abbrev-ref", "HEAD")))
	rep, err = v.VerifyIncremental()
	wantProblemIn(t, "incremental verify after a pull", rep, err, "ledger/2099/12/31.jsonl")
}
