package fileio

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/memvault/memvault/vault/fault"
)

// ErrChanged is what ReplaceIfSame returns when the file does not hold the
// bytes the caller read: someone saved it since. Nothing was written; the
// caller reads the file again and merges with what was saved.
var ErrChanged = errors.New("changed since it was read")

// errUnsupported says a way of replacing is not available for this file
// (the file system, the kernel, a link or a special file): the next one
// is tried.
var errUnsupported = errors.New("not supported here")

// HeadWriteEnv names the variable that forces one way of ReplaceIfSame:
// "lease", "exchange" or "rename" (a diagnostic, for measuring each; unset
// or anything else: the best the system has).
const HeadWriteEnv = "MEMVAULT_HEAD_WRITE"

// ReplaceIfSame makes path hold data, provided it holds exactly was at the
// moment it is replaced (existed false: provided it does not exist). It is
// the write of a file a person may save at the same moment with any editor,
// without any lock of memvault's: a head. It returns ErrChanged, having
// written nothing, when the file is not what the caller read.
//
// The promise is that it never replaces bytes it did not compare with was.
// How it keeps it depends on the system, best first (HeadWriteEnv forces
// one):
//
//   - lease (Linux): the file is opened and given an exclusive lease, which
//     the kernel grants only while no other process has it open and which
//     holds back every other open of it (reads, writes, truncations) until
//     released. Under the lease the file is read, compared, and rewritten
//     in place, on the same inode, then synced. A save that comes during
//     the lease waits for it and lands after, on the file at path; a save
//     by rename puts a new file at path, which is checked before and after
//     the write (the write then went to the replaced inode: ErrChanged). No
//     window is left. The price: a process killed inside the rewrite leaves
//     the file torn, which the caller must be able to undo (the heads'
//     journal does, vault/headjournal.go).
//   - exchange (Linux, when the lease cannot be had: another program keeps
//     the file open, or the file system has no leases): the new bytes go to
//     a temporary file that renameat2(RENAME_EXCHANGE) swaps with path, so
//     that what was at path at the instant of the swap is left under the
//     temporary name. Unless it is the file that was read, unchanged (same
//     inode, and no writer announced under a read lease, or the same bytes
//     without one), it is swapped back and ErrChanged returned. A save by
//     rename is never lost; a writer that opened the old file before the
//     swap and writes after it is not seen (see docs/HEADS.md).
//   - rename (elsewhere, or neither works): the file is compared again after
//     the new bytes are synced, just before the rename. The instant between
//     that check and the rename is not covered.
//
// A file that did not exist is created with a hard link from the temporary
// file, which fails when a file appeared meanwhile, so nothing is replaced.
// The file gets FilePerm; errors other than ErrChanged are fault.ErrIO.
func ReplaceIfSame(path string, data, was []byte, existed bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, DirPerm); err != nil {
		return fault.IO("create "+dir, err)
	}
	if !existed {
		return createNew(path, data)
	}
	method := os.Getenv(HeadWriteEnv)
	if method != "exchange" && method != "rename" {
		// Bytes equal to was are compared under the lease, not written.
		if err := replaceLeased(path, data, was); !errors.Is(err, errUnsupported) {
			return err
		}
	}
	if bytes.Equal(data, was) {
		// Nothing to write (the caller commits the file as it is): only
		// the compare, with no writer at work on the file where that can
		// be known. Writing the same bytes by rename would still send an
		// open writer's bytes nowhere.
		return confirmSame(path, was)
	}
	if method != "rename" {
		if err := replaceExchanged(path, data, was); !errors.Is(err, errUnsupported) {
			return err
		}
	}
	return replaceRenamed(path, data, was)
}

// createNew creates path with data only if it does not exist: a hard link
// from a synced temporary file fails when the name is taken. Where hard
// links are not supported it checks and renames.
func createNew(path string, data []byte) error {
	tmp, err := writeTemp(path, data, FilePerm, true, true)
	if err != nil {
		return fault.IO("write "+path, err)
	}
	defer os.Remove(tmp)
	switch err := os.Link(tmp, path); {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		return ErrChanged
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.ENOTSUP), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.EXDEV):
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			return ErrChanged
		}
		if err := os.Rename(tmp, path); err != nil {
			return fault.IO("write "+path, err)
		}
	default:
		return fault.IO("write "+path, err)
	}
	return SyncDir(filepath.Dir(path))
}

// sameAsRead returns ErrChanged unless path holds was.
func sameAsRead(path string, was []byte) error {
	cur, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ErrChanged
	case err != nil:
		return fault.IO("read "+path, err)
	case !bytes.Equal(cur, was):
		return ErrChanged
	}
	return nil
}

// replaceRenamed is the portable way: compare, write the new bytes to a
// temporary file and sync it, compare again, rename.
func replaceRenamed(path string, data, was []byte) error {
	same := func() error { return sameAsRead(path, was) }
	if err := same(); err != nil {
		return err
	}
	return WriteAtomicIf(path, data, same)
}

// ReplaceIfSame is the package's ReplaceIfSame for a path below the root:
// a symbolic link in its folders or at the path is refused, not followed.
func (r Root) ReplaceIfSame(path string, data, was []byte, existed bool) error {
	full, err := r.prepare(path)
	if err != nil {
		return err
	}
	return ReplaceIfSame(full, data, was, existed)
}
