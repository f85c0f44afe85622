package gc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/testvault"
)

// stepLog records what long work reports, in order.
type stepLog struct{ steps []vault.Step }

func (l *stepLog) record(s vault.Step) { l.steps = append(l.steps, s) }

// phases are the distinct phases in the order they first appeared.
func (l *stepLog) phases() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range l.steps {
		if !seen[s.Phase] {
			seen[s.Phase] = true
			out = append(out, s.Phase)
		}
	}
	return out
}

// last is the last step of phase; ok is false when the phase never came.
func (l *stepLog) last(phase string) (vault.Step, bool) {
	for i := len(l.steps) - 1; i >= 0; i-- {
		if l.steps[i].Phase == phase {
			return l.steps[i], true
		}
	}
	return vault.Step{}, false
}

// checkCounts fails when a phase's count goes backwards or past its total:
// a renderer would draw 120% or a bar running back.
func (l *stepLog) checkCounts(t *testing.T) {
	t.Helper()
	done := map[string]int64{}
	for _, s := range l.steps {
		if s.Done < done[s.Phase] {
			t.Errorf("%s: count went back from %d to %d", s.Phase, done[s.Phase], s.Done)
		}
		if s.Total > 0 && s.Done > s.Total {
			t.Errorf("%s: %d of %d", s.Phase, s.Done, s.Total)
		}
		done[s.Phase] = s.Done
	}
}

// duBytes walks dir as du -s does, independently of gitrepo.Measure: the
// blocks of every file, folder and link (512-byte units), a file with
// several links once.
func duBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	seen := map[[2]uint64]bool{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		key := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
		if seen[key] {
			return nil
		}
		seen[key] = true
		n += int64(st.Blocks) * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// duCommand is `du -sk dir` in bytes, or -1 without a du on the PATH.
func duCommand(t *testing.T, dir string) int64 {
	t.Helper()
	if _, err := exec.LookPath("du"); err != nil {
		return -1
	}
	out, err := exec.Command("du", "-sk", dir).Output()
	if err != nil {
		t.Fatalf("du -sk %s: %v", dir, err)
	}
	kib, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	if err != nil {
		t.Fatalf("du -sk %s: %q", dir, out)
	}
	return kib << 10
}

// TestGCFiguresMatchDu: gc's before and after figures for .git are what du
// shows, on a vault of a few hundred commits (thousands of small loose
// objects, where the sum of the files' sizes is a fraction of the disk they
// take), opened through a symbolic link to its folder, which the walk once
// sized as nothing.
func TestGCFiguresMatchDu(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes 300 commits")
	}
	real := testvault.New(t)
	off := false
	real.Config.GC.Auto = &off // the loose objects are what is measured
	for i := range 10 {
		testvault.Remember(t, real, fmt.Sprintf("fact %d: the cache is warmed before the first request", i))
	}
	// The rest of the history is made through the object layer, the way a
	// transaction commits but without its other work (300 transactions
	// were most of this package's race-suite time): each commit is a blob,
	// the trees above it and the commit, all loose.
	who := gitrepo.Signature{Name: "p", Email: "p@x"}
	for i := range 290 {
		c := &gitrepo.Change{Path: fmt.Sprintf("notes/n%03d.md", i), Content: fmt.Appendf(nil, "note %d: the cache is warmed before the first request\n", i)}
		if _, err := real.Repo.Commit([]*gitrepo.Change{c}, fmt.Sprintf("note %d", i), who, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(t.TempDir(), "linked")
	if err := os.Symlink(real.Root, link); err != nil {
		t.Fatal(err)
	}
	v, err := vault.Open(link)
	if err != nil {
		t.Fatal(err)
	}
	gitDir := filepath.Join(real.Root, ".git")
	before, cmdBefore := duBytes(t, gitDir), duCommand(t, gitDir)
	size, err := gitrepo.Measure(filepath.Join(link, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	if size.LooseObjects < 900 {
		t.Fatalf("want a vault of many loose objects, got %d", size.LooseObjects)
	}
	if size.DiskBytes <= size.GitBytes {
		t.Errorf("disk %d ≤ data %d: thousands of small loose objects take more disk than their size", size.DiskBytes, size.GitBytes)
	}
	rep, err := Run(v, Options{Engine: EngineGoGit})
	if err != nil {
		t.Fatal(err)
	}
	after, cmdAfter := duBytes(t, gitDir), duCommand(t, gitDir)
	if rep.Before.DiskBytes != before || rep.After.DiskBytes != after {
		t.Errorf("gc says .git took %d → %d bytes on disk; a du-like walk says %d → %d", rep.Before.DiskBytes, rep.After.DiskBytes, before, after)
	}
	if size.DiskBytes != before {
		t.Errorf("Measure through the link: %d bytes on disk, the walk of the folder %d", size.DiskBytes, before)
	}
	if cmdBefore >= 0 && (roundKiB(rep.Before.DiskBytes) != cmdBefore || roundKiB(rep.After.DiskBytes) != cmdAfter) {
		t.Errorf("gc says %d → %d bytes on disk; du -sk says %d → %d", rep.Before.DiskBytes, rep.After.DiskBytes, cmdBefore, cmdAfter)
	}
	if rep.After.DiskBytes >= rep.Before.DiskBytes {
		t.Errorf("gc grew .git on disk: %d → %d", rep.Before.DiskBytes, rep.After.DiskBytes)
	}
	direct, err := contentBytes(real.Root)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ContentBytes == 0 || rep.ContentBytes != direct {
		t.Errorf("content through the link: %d bytes, through the folder itself: %d", rep.ContentBytes, direct)
	}
}

// roundKiB rounds n up to whole KiB, as du -k prints it.
func roundKiB(n int64) int64 { return (n + 1023) >> 10 << 10 }

// TestEstimateLoose: the estimate is the sample folder's objects × 256,
// names that are not objects (git's temporary files) left out, and nothing
// for a folder that does not exist; the advice comes past the threshold
// and not at it.
func TestEstimateLoose(t *testing.T) {
	v := testvault.New(t)
	off := false
	v.Config.GC.Auto = &off // the advice is for a vault that does not pack itself
	sample := filepath.Join(v.Root, ".git", "objects", gitrepo.LooseSample)
	os.RemoveAll(sample)
	if got := EstimateLoose(v); got.Objects != 0 || got.DiskBytes != 0 || got.GCAdvised || got.Advice() != "" {
		t.Fatalf("no sample folder: %+v", got)
	}
	if err := os.MkdirAll(sample, 0o700); err != nil {
		t.Fatal(err)
	}
	add := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(sample, name), []byte("x"), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	add("tmp_obj_123456")        // git's temporary file, not an object
	add(strings.Repeat("A", 38)) // upper case: not a name git writes
	add(strings.Repeat("0", 37)) // too short
	want := adviceLoose / 256    // 26 objects: 6,656, not past 6,700
	for i := range want {
		add(fmt.Sprintf("%038x", i))
	}
	got := EstimateLoose(v)
	if got.Objects != want*256 || got.GCAdvised || got.Threshold != adviceLoose {
		t.Fatalf("%d objects in the sample: %+v, want %d and no advice", want, got, want*256)
	}
	if got.DiskBytes <= 0 {
		t.Errorf("disk estimate %d for %d files", got.DiskBytes, want)
	}
	if a := Advice(v); a != "" {
		t.Errorf("at %d, not past the threshold: advice %q", want*256, a)
	}
	add(fmt.Sprintf("%038x", want))
	got = EstimateLoose(v)
	if got.Objects != (want+1)*256 || !got.GCAdvised {
		t.Fatalf("%d objects in the sample: %+v, want advice", want+1, got)
	}
	if a := got.Advice(); !strings.Contains(a, "~6,912 loose git objects") || !strings.Contains(a, "memvault gc") || Advice(v) != a {
		t.Errorf("advice %q, Advice %q", a, Advice(v))
	}
	// A vault that packs itself has nothing to advise.
	v.Config.GC.Auto = nil
	if a := Advice(v); v.AutoPacks() && a != "" {
		t.Errorf("a vault that packs itself advises %q", a)
	}
}

// TestEstimateLooseCountsRealObjects: on a real repository the estimate is
// exactly 256 times what git counts in the sample folder.
func TestEstimateLooseCountsRealObjects(t *testing.T) {
	v := testvault.New(t)
	for i := range 40 {
		testvault.Remember(t, v, fmt.Sprintf("fact %d", i))
	}
	entries, _ := os.ReadDir(filepath.Join(v.Root, ".git", "objects", gitrepo.LooseSample))
	if got := EstimateLoose(v); got.Objects != len(entries)*256 {
		t.Fatalf("estimate %d, the sample folder holds %d objects", got.Objects, len(entries))
	}
}

// TestGCReportsProgress: the go-git engine names each of its phases in
// order, counts up and never past its totals, and reads as many objects as
// it packs.
func TestGCReportsProgress(t *testing.T) {
	v := testvault.New(t)
	for i := range 30 {
		testvault.Remember(t, v, fmt.Sprintf("fact %d", i))
	}
	var log stepLog
	v.Progress = log.record
	rep, err := Run(v, Options{Engine: EngineGoGit})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gc: measuring .git", "gc: finding reachable objects", "gc: reading objects", "gc: finding deltas",
		"gc: writing the pack", "gc: removing loose objects"}
	if got := log.phases(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("phases\n got %q\nwant %q", got, want)
	}
	log.checkCounts(t)
	if s, _ := log.last("gc: reading objects"); s.Done != int64(rep.Packed) || s.Total != int64(rep.Packed) {
		t.Errorf("read %d of %d objects, packed %d", s.Done, s.Total, rep.Packed)
	}
	if s, _ := log.last("gc: finding reachable objects"); s.Done != int64(rep.Packed) {
		t.Errorf("found %d reachable objects, packed %d", s.Done, rep.Packed)
	}
	if s := log.steps[len(log.steps)-1]; s.Phase != "gc: measuring .git" {
		t.Errorf("last step %+v, want the measure after the pack", s)
	}
}

// BenchmarkAdvice is the cost the gc hint adds to a write: "below" is a
// vault under the threshold (26 objects in the sample folder), "above" one
// of about 21,000 loose objects (3,500 remember commands; 82 in the
// folder), where the line is printed and the disk estimate made.
func BenchmarkAdvice(b *testing.B) {
	for _, c := range []struct {
		name string
		n    int
	}{{"below", 26}, {"above", 82}} {
		b.Run(c.name, func(b *testing.B) {
			v := &vault.Vault{Root: b.TempDir()}
			off := false
			v.Config.GC.Auto = &off // the hint is for a vault that does not pack itself
			sample := filepath.Join(v.Root, ".git", "objects", gitrepo.LooseSample)
			if err := os.MkdirAll(sample, 0o700); err != nil {
				b.Fatal(err)
			}
			for i := range c.n {
				if err := os.WriteFile(filepath.Join(sample, fmt.Sprintf("%038x", i)), make([]byte, 300), 0o400); err != nil {
					b.Fatal(err)
				}
			}
			if got := Advice(v); (got != "") != (c.n*256 > adviceLoose) {
				b.Fatalf("%d in the sample: advice %q", c.n, got)
			}
			b.ResetTimer()
			for range b.N {
				Advice(v)
			}
		})
	}
}
