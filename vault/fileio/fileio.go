// Package fileio is the one way memvault writes a file.
//
// Every whole-file write in memvault goes through this package, so that the
// rules of a safe write are decided once: the bytes go to a temporary file
// beside the target and are renamed over it, so that a reader, or a crash at
// any moment, sees the old file or the new one and never a mix. Where the
// writers differ is in what they promise after a crash of the machine, and
// each says so:
//
//   - WriteAtomic and WriteAtomicIf: durable on return (fsync of the file and
//     of its folder). For the vault's own files.
//   - WriteCache: atomic but not synced. For derived files a reader checks
//     and rebuilds when they are lost or torn.
//   - WriteKeepMode: durable, and the file keeps the mode it had. For files
//     that belong to the user, such as a harness's settings.
//   - Append: whole lines added with one O_APPEND write, then synced. For the
//     ledger and journals, which only grow.
//   - ReplaceIfSame: a file replaced only if it holds the bytes the caller
//     read, in a step no other process's save can enter (replace.go). For
//     heads, which people save at any moment with any editor.
//
// TestOneWayToWrite keeps this true: it fails when code elsewhere in the
// module creates or truncates a file with os.WriteFile, os.Create,
// os.CreateTemp or os.OpenFile, except in the few functions it lists with
// the reason (git's own files, written by git's rules).
//
// Inside the vault every one of these goes through a Root (beneath.go),
// which also reads, lists, creates folders and removes, and never through
// a symbolic link; TestNoLinkFollowed holds the vault's code to it.
//
// The package is a leaf: it imports only the standard library,
// golang.org/x/sys/unix (openat2, leases, renameat2) and vault/fault.
package fileio

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/memvault/memvault/vault/fault"
)

// Permissions for everything memvault creates in the vault. The vault holds
// private conversations, so nothing is readable by other users; the process
// umask can only make these stricter.
const (
	DirPerm  fs.FileMode = 0o700
	FilePerm fs.FileMode = 0o600
)

// WriteAtomic replaces path with data so that a reader, or a crash at any
// moment, sees either the old file or the new one and never a mix: the bytes
// go to a temporary file in the same folder, which is synced, renamed over
// path, and then the folder itself is synced so the rename is durable. The
// folder is created (DirPerm) when missing; the file gets FilePerm. Errors
// are classified as fault.ErrIO.
func WriteAtomic(path string, data []byte) error {
	return WriteAtomicIf(path, data, nil)
}

// File is one file of a WriteAtomicAll: its path and its new bytes.
type File struct {
	Path string
	Data []byte
}

// WriteAtomicAll replaces each file as WriteAtomic does, but syncs each
// folder once, after every rename into it: n files in one folder cost n+1
// fsyncs rather than 2n. All are durable when it returns nil; a crash
// before may leave any of them written or not, each whole, as n calls of
// WriteAtomic would. It stops at the first error, after syncing the
// folders of what it renamed.
func WriteAtomicAll(files []File) error {
	var dirs []string
	var err error
	for _, f := range files {
		dir := filepath.Dir(f.Path)
		if err = os.MkdirAll(dir, DirPerm); err != nil {
			err = fault.IO("create "+dir, err)
			break
		}
		tmp, werr := writeTemp(f.Path, f.Data, FilePerm, true, true)
		if werr != nil {
			err = fault.IO("write "+f.Path, werr)
			break
		}
		if rerr := os.Rename(tmp, f.Path); rerr != nil {
			os.Remove(tmp)
			err = fault.IO("write "+f.Path, rerr)
			break
		}
		if !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	for _, dir := range dirs {
		if serr := SyncDir(dir); err == nil {
			err = serr
		}
	}
	return err
}

// WriteAtomicIf is WriteAtomic with a last check: when ready is not nil it
// runs after the new bytes are on disk and just before the rename, and an
// error from it, returned as it is, leaves path untouched. A check made any
// earlier would leave the time of a sync (milliseconds on a busy disk) for a
// person's save to be replaced.
func WriteAtomicIf(path string, data []byte, ready func() error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, DirPerm); err != nil {
		return fault.IO("create "+dir, err)
	}
	tmp, err := writeTemp(path, data, FilePerm, true, true)
	if err != nil {
		return fault.IO("write "+path, err)
	}
	if ready != nil {
		if err := ready(); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fault.IO("write "+path, err)
	}
	return SyncDir(dir)
}

// WriteCache replaces path with data atomically but syncs nothing. It is for
// derived files under .state/ and the like (caches, verified stamps, index
// watermarks, markers a killed process leaves for the next one): a crash of
// the process still leaves the old file or the new one, because the kernel
// keeps what was written; a crash of the machine may lose the file or leave
// it torn, and its reader must detect that and rebuild it from the vault.
// Skipping the two fsyncs is what makes it cheap enough to run on every
// command. The folder is created (DirPerm) when missing; the file gets
// FilePerm. Errors are classified as fault.ErrIO; most callers ignore them,
// since a missing cache costs only a rebuild.
func WriteCache(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, DirPerm); err != nil {
		return fault.IO("create "+dir, err)
	}
	tmp, err := writeTemp(path, data, FilePerm, true, false)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fault.IO("write "+path, err)
	}
	return nil
}

// WriteKeepMode replaces path with data atomically and durably, as
// WriteAtomic does, for a file that belongs to the user rather than to the
// vault, such as a harness's settings. Such a file keeps its permission
// bits: a private 0600 settings.json must not become readable by others, nor
// a shared 0644 one private, because memvault edited it. A new file gets
// perm as narrowed by the process umask, as any file the user's tools create.
// The folder must exist (its owner, not memvault, decides its mode). A
// symbolic link at path is replaced by a regular file holding the target's
// permission bits.
//
// Errors are the os package's, not classified: the file is outside the vault,
// and fault's hints speak about the vault.
func WriteKeepMode(path string, data []byte, perm fs.FileMode) error {
	keep := false
	if info, err := os.Stat(path); err == nil {
		perm, keep = info.Mode().Perm(), true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp, err := writeTemp(path, data, perm, keep, true)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// writeTemp writes data to a new temporary file beside path, named
// .<name>.tmp-<n> so that it is hidden and recognisably memvault's, and
// returns its name. The file is created with perm, which the umask narrows;
// chmod sets perm exactly instead. With sync the data is on disk before the
// file is closed. On error nothing is left behind.
func writeTemp(path string, data []byte, perm fs.FileMode, chmod, sync bool) (string, error) {
	dir, prefix := filepath.Dir(path), "."+filepath.Base(path)+".tmp-"
	var f *os.File
	var err error
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	if chmod {
		err = f.Chmod(perm)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// appendTo is Root.Append's write through the file open returns: one
// write, a sync, and a sync of the folder when the file is new.
func appendTo(path string, data []byte, created bool, open func() (*os.File, error)) error {
	f, err := open()
	if err != nil {
		return fault.IO("append "+path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fault.IO("append "+path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fault.IO("append "+path, err)
	}
	if err := f.Close(); err != nil {
		return fault.IO("append "+path, err)
	}
	if created {
		return SyncDir(filepath.Dir(path))
	}
	return nil
}

// SyncDir makes a rename or a file creation in dir durable: the new name
// lives in the folder, which the file's own fsync does not cover. Errors are
// classified as fault.ErrIO.
func SyncDir(dir string) error {
	if err := syncDir(dir); err != nil {
		return fault.IO("sync "+dir, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	// Some file systems cannot sync a folder and say EINVAL; there is
	// nothing more to do on them.
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}
