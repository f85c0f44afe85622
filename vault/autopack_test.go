package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/vaulttest"
)

// TestAutoPackUnderConcurrentWriters: writers in several vault handles
// (as several processes would be) commit while the automatic pack, started
// by their own writes past a small threshold, runs git gc --auto beside
// them. No object may be lost: every event is in the ledger, git fsck
// --strict is clean, verify passes, and the loose objects did get packed.
// A handle opened before a pack must still find its objects after it
// (Repo.Refresh).
func TestAutoPackUnderConcurrentWriters(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("the automatic pack runs git")
	}
	v := newVault(t)
	t.Cleanup(func() { v.WaitAutoPack(time.Minute) }) // before the folder goes
	// Two files in the sampled folder pass a threshold of 256 whatever the
	// hashes of the objects the writers make: every commit then starts a
	// pack, the most a pack can run beside writers. They are not objects;
	// git's prune keeps them (they are new) and they go before fsck.
	fakes := plantLoose(t, v, 2)
	const writers, each = 3, 12
	handles := make([]*Vault, writers)
	for i := range handles {
		h, err := Open(v.Root)
		if err != nil {
			t.Fatal(err)
		}
		h.Config.GC.AutoLoose = 256 // two objects in the sampled folder
		handles[i] = h
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i, h := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < each; k++ {
				_, err := h.Update(TxOptions{LockTimeout: time.Minute}, func(tx *Tx) error {
					_, err := queueRow(tx, "fact", fmt.Sprintf("writer %d fact %d about packing", i, k))
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := v.WaitAutoPack(time.Minute); err != nil {
		t.Fatal(err)
	}
	size, err := gitrepo.Measure(filepath.Join(v.Root, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	if size.Packs == 0 {
		t.Fatalf("no pack after %d commits past a threshold of 256 loose objects: %+v", writers*each, size)
	}
	for _, f := range fakes {
		os.Remove(f)
	}
	vaulttest.Fsck(t, v.Root)
	mustVerify(t, v)
	segs, _, err := ListSegments(v.Root)
	if err != nil {
		t.Fatal(err)
	}
	st, _, _, err := v.FoldAll(segs)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range st.Rows {
		if strings.HasSuffix(r.Text, "about packing") {
			n++
		}
	}
	if n != writers*each {
		t.Fatalf("%d events in the ledger, want %d", n, writers*each)
	}
	// Every handle still reads and writes after the packs.
	for i, h := range handles {
		if _, err := h.Update(TxOptions{}, func(tx *Tx) error {
			_, err := queueRow(tx, "fact", fmt.Sprintf("writer %d after the packs", i))
			return err
		}); err != nil {
			t.Fatalf("handle %d after the packs: %v", i, err)
		}
	}
	if err := v.WaitAutoPack(time.Minute); err != nil {
		t.Fatal(err)
	}
	vaulttest.Fsck(t, v.Root)
}

// TestAutoPackOff: [gc] auto = false leaves the loose objects to memvault
// gc, and the hint says so.
func TestAutoPackOff(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("the automatic pack runs git")
	}
	v := newVault(t)
	off := false
	v.Config.GC.Auto = &off
	v.Config.GC.AutoLoose = 256
	plantLoose(t, v, 2)
	for k := 0; k < 5; k++ {
		remember(t, v, fmt.Sprintf("fact %d", k))
	}
	if err := v.WaitAutoPack(time.Minute); err != nil {
		t.Fatal(err)
	}
	size, err := gitrepo.Measure(filepath.Join(v.Root, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	if size.Packs != 0 {
		t.Fatalf("packed with [gc] auto = false: %+v", size)
	}
}

// plantLoose writes n files named as loose objects in the folder the
// estimate samples, and returns their paths.
func plantLoose(t *testing.T, v *Vault, n int) []string {
	dir := filepath.Join(v.Root, ".git", "objects", gitrepo.LooseSample)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := 1; i <= n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("%038x", i))
		if err := os.WriteFile(p, []byte("x"), 0o444); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}
