package vault

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/memvault/memvault/vault/fault"
)

// Permissions for everything memvault creates. The vault holds private
// conversations, so nothing is readable by other users; the process umask
// can only make these stricter.
const (
	dirPerm  fs.FileMode = 0o700
	filePerm fs.FileMode = 0o600
)

// WriteFileAtomic replaces path with data so that a reader, or a crash at any
// moment, sees either the old file or the new one and never a mix: the bytes
// go to a temporary file in the same directory, which is synced, renamed over
// path, and then the directory itself is synced so the rename is durable.
// It is the only way memvault writes a whole file.
func WriteFileAtomic(path string, data []byte) error {
	return writeFileAtomicIf(path, data, nil)
}

// writeFileAtomicIf is WriteFileAtomic with a last check: when ready is not
// nil it runs after the new bytes are on disk and just before the rename,
// and an error from it leaves path untouched. A check made any earlier
// would leave the time of a sync (milliseconds on a busy disk) for a
// person's save to be replaced.
func writeFileAtomicIf(path string, data []byte, ready func() error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return fault.IO("create "+dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fault.IO("write "+path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(filePerm); err != nil {
		return fault.IO("write "+path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fault.IO("write "+path, err)
	}
	if err := f.Sync(); err != nil {
		return fault.IO("write "+path, err)
	}
	if err := f.Close(); err != nil {
		return fault.IO("write "+path, err)
	}
	if ready != nil {
		if err := ready(); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fault.IO("write "+path, err)
	}
	ok = true
	return syncDir(dir)
}

// appendFile appends data, which must be whole lines, to path with a single
// O_APPEND write and syncs it before returning. A crash can leave at most a
// torn last line, which readers ignore and the next writer repairs.
func appendFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	created := false
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, dirPerm); err != nil {
			return fault.IO("create "+dir, err)
		}
		created = true
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, filePerm)
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
		return syncDir(dir)
	}
	return nil
}

// syncDir makes a rename or a file creation in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fault.IO("sync "+dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fault.IO("sync "+dir, err)
	}
	return nil
}
