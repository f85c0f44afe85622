//go:build linux

package vault

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/memvault/memvault/vault/vaulttest"
)

// mountTmpfs mounts a small tmpfs for tests of full and read-only disks.
// It needs root; CI runs as root, so there these tests always run.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount tmpfs here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

func sameFiles(t *testing.T, a, b map[string][]byte) {
	t.Helper()
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			t.Errorf("%s changed", k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			t.Errorf("%s appeared", k)
		}
	}
}

func TestFullDisk(t *testing.T) {
	mnt := mountTmpfs(t, "1m")
	v, _, err := Init(filepath.Join(mnt, DirName))
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		remember(t, v, "before the disk filled up")
	}
	// Fill the disk to the last byte.
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := filler.Write(chunk); err != nil {
			break
		}
	}
	for {
		if _, err := filler.Write(chunk[:1]); err != nil {
			break
		}
	}
	filler.Close()

	head, _ := v.Head()
	before := vaulttest.Files(t, v.Root)
	big := strings.Repeat("a long memory that needs room on disk ", 200)
	for range 3 {
		_, err = v.Update(TxOptions{}, func(tx *Tx) error { _, err := queueRow(tx, "fact", big); return err })
		if !errors.Is(err, ErrIO) || !strings.Contains(err.Error(), "no space left on device") {
			t.Fatalf("want a full-disk error, got %v", err)
		}
		if HintOf(err) == "" {
			t.Error("a full disk deserves a hint")
		}
	}
	if h, _ := v.Head(); h != head {
		t.Fatal("HEAD moved on a full disk")
	}
	sameFiles(t, before, vaulttest.Files(t, v.Root))
	mustVerify(t, v)

	// Once space returns, the vault works as before.
	os.Remove(filepath.Join(mnt, "filler"))
	remember(t, v, "after space came back")
	if rep := mustVerify(t, v); rep.Events != 6 {
		t.Fatalf("%d events", rep.Events)
	}
	vaulttest.Fsck(t, v.Root)
}

func TestReadOnlyDisk(t *testing.T) {
	mnt := mountTmpfs(t, "4m")
	v, _, err := Init(filepath.Join(mnt, DirName))
	if err != nil {
		t.Fatal(err)
	}
	remember(t, v, "before the remount")
	if err := syscall.Mount("", mnt, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount read-only: %v", err)
	}
	_, err = v.Update(TxOptions{}, func(tx *Tx) error { _, err := queueRow(tx, "fact", "x"); return err })
	if !errors.Is(err, ErrIO) || !strings.Contains(err.Error(), "read-only file system") {
		t.Fatalf("want a read-only error, got %v", err)
	}
	if !strings.Contains(HintOf(err), "read-only") {
		t.Errorf("hint: %q", HintOf(err))
	}
	// Reading needs no write access.
	mustVerify(t, v)
	if st, err := v.LoadState(); err != nil || len(st.Rows) != 1 {
		t.Fatalf("state on a read-only disk: %v", err)
	}
	if err := syscall.Mount("", mnt, "", syscall.MS_REMOUNT, ""); err != nil {
		t.Fatal(err)
	}
	remember(t, v, "after the remount")
	mustVerify(t, v)
	vaulttest.Fsck(t, v.Root)
}
