//go:build linux

package fileio

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memvault/memvault/vault/fault"
)

// leaseWait bounds how long ReplaceIfSame waits for a moment when nobody
// has the file open (an editor reads and writes it in milliseconds) before
// it tries the next way.
const leaseWait = 250 * time.Millisecond

// errBusy: another process has the file open, so the kernel refuses the
// lease (or holds a lease of its own on it).
var errBusy = errors.New("open elsewhere")

// errNoLease: the kernel or the file system gives no lease on this file.
var errNoLease = errors.New("no lease")

// openRegular opens path without following a symbolic link and without
// waiting on another process's lease. A link or anything but a regular
// file is errUnsupported: ReplaceIfSame then replaces it by rename, as the
// other writers do.
func openRegular(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ErrChanged
	case errors.Is(err, syscall.EWOULDBLOCK):
		return nil, errBusy
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM),
		errors.Is(err, syscall.ENXIO), errors.Is(err, syscall.EISDIR):
		return nil, errUnsupported
	case err != nil:
		return nil, fault.IO("open "+path, err)
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		f.Close()
		return nil, errUnsupported
	}
	return f, nil
}

// takeLease asks the kernel for a lease of kind (unix.F_WRLCK, F_RDLCK) on
// f: errBusy when another process has the file open in a way that
// conflicts, errNoLease when leases are not available.
func takeLease(f *os.File, kind int) error {
	if kind == unix.F_WRLCK && !leaseBreakHolds() {
		return errNoLease
	}
	_, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, kind)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EAGAIN):
		return errBusy
	default:
		return errNoLease
	}
}

func dropLease(f *os.File) { _, _ = unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK) }

// leaseBreakHolds reports whether the kernel holds back an open that breaks
// a lease for at least a second (fs.lease-break-time, 45 s by default):
// with 0 it would let the opener in at once, in the middle of the rewrite.
func leaseBreakHolds() bool {
	data, err := os.ReadFile("/proc/sys/fs/lease-break-time")
	if err != nil {
		return true // no /proc: the kernel's default
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return err != nil || n >= 1
}

// pauses calls try until it returns something other than errBusy or the
// wait is over, sleeping a little longer each time, with jitter so that
// two waiters do not keep meeting.
func pauses(try func() error) error {
	deadline := time.Now().Add(leaseWait)
	pause := 500 * time.Microsecond
	for {
		err := try()
		if !errors.Is(err, errBusy) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(pause/2 + rand.N(pause))
		pause = min(2*pause, 8*time.Millisecond)
	}
}

// atPath reports whether path still names the file f has open: a save by
// rename puts another file there.
func atPath(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Lstat(path)
	return err == nil && os.SameFile(fi, pi)
}

// replaceLeased is ReplaceIfSame's first way: an exclusive lease, then the
// compare and the rewrite in place. errUnsupported when no lease can be had
// within leaseWait.
func replaceLeased(path string, data, was []byte) error {
	var f *os.File
	err := pauses(func() error {
		g, err := openRegular(path, os.O_RDWR)
		if err != nil {
			return err
		}
		// An editor that saves in a tight loop has the file open nearly
		// all the time: keep asking, with this descriptor, for the moments
		// it has not.
		for range 20 {
			if err = takeLease(g, unix.F_WRLCK); !errors.Is(err, errBusy) {
				break
			}
			time.Sleep(rand.N(200 * time.Microsecond))
		}
		if err != nil {
			g.Close()
			return err
		}
		f = g
		return nil
	})
	if errors.Is(err, errBusy) || errors.Is(err, errNoLease) {
		return errUnsupported
	}
	if err != nil {
		return err
	}
	defer f.Close()
	defer dropLease(f)
	// Nobody else has the file open, and nobody can open it until the
	// lease is dropped: what is read here is what is replaced.
	cur, err := io.ReadAll(f)
	if err != nil {
		return fault.IO("read "+path, err)
	}
	if !bytes.Equal(cur, was) || !atPath(f, path) {
		return ErrChanged
	}
	if bytes.Equal(data, was) {
		return nil
	}
	// One write, then the length: a kill between them, or inside a write
	// of several pages, leaves the file torn, never a person's byte lost.
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if err == nil {
		err = f.Chmod(FilePerm)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return fault.IO("write "+path, err)
	}
	if !atPath(f, path) {
		// A save by rename replaced the file while it was rewritten: the
		// new bytes went to the file it replaced, which nobody reads.
		return ErrChanged
	}
	return nil
}

// openReadLeased opens path for reading under a read lease, waiting out
// (pauses) a writer that keeps it open; leased is false where the file
// system grants no leases, and the file is then open without one.
func openReadLeased(path string) (r *os.File, leased bool, err error) {
	leased = true
	err = pauses(func() error {
		g, err := openRegular(path, os.O_RDONLY)
		if err != nil {
			return err
		}
		switch err := takeLease(g, unix.F_RDLCK); {
		case errors.Is(err, errNoLease):
			leased = false
		case err != nil:
			g.Close()
			return err
		}
		r = g
		return nil
	})
	return r, leased, err
}

// replaceExchanged is ReplaceIfSame's second way: swap a new file in with
// renameat2(RENAME_EXCHANGE), then look at what came out.
func replaceExchanged(path string, data, was []byte) error {
	r, leased, err := openReadLeased(path)
	if errors.Is(err, errBusy) {
		// Another process keeps the file open for writing: a save in
		// progress. Replacing the file now would send its bytes nowhere.
		return ErrChanged
	}
	if err != nil {
		return err
	}
	defer r.Close()
	if leased {
		defer dropLease(r)
	}
	if !sameBytes(r, was) {
		return ErrChanged
	}
	tmp, err := writeTemp(path, data, FilePerm, true, true)
	if err != nil {
		return fault.IO("write "+path, err)
	}
	ours, err := os.Lstat(tmp)
	if err != nil {
		os.Remove(tmp)
		return fault.IO("write "+path, err)
	}
	// A last look just before the swap: still the file read, unchanged.
	if !atPath(r, path) || (!leased && !sameBytes(r, was)) {
		os.Remove(tmp)
		return ErrChanged
	}
	switch err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE); {
	case err == nil:
	case errors.Is(err, unix.ENOENT):
		os.Remove(tmp)
		return ErrChanged
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOTSUP):
		os.Remove(tmp)
		return errUnsupported
	default:
		os.Remove(tmp)
		return fault.IO("write "+path, err)
	}
	// tmp now names what path held at the instant of the swap.
	out, err := os.Lstat(tmp)
	in, ierr := r.Stat()
	ok := err == nil && ierr == nil && os.SameFile(out, in)
	if ok && leased {
		// Still F_RDLCK: no writer opened the file since it was read.
		l, err := unix.FcntlInt(r.Fd(), unix.F_GETLEASE, 0)
		ok = err == nil && l == unix.F_RDLCK
	} else if ok {
		ok = sameBytes(r, was)
	}
	if ok {
		os.Remove(tmp)
		return SyncDir(filepath.Dir(path))
	}
	return putBack(path, tmp, ours)
}

// confirmSame returns nil if path holds was with no process writing it:
// under a read lease, which the kernel refuses while a writer has the file
// open (a save half done). Without leases it compares what it reads.
func confirmSame(path string, was []byte) error {
	r, leased, err := openReadLeased(path)
	switch {
	case errors.Is(err, errBusy):
		return ErrChanged // a save in progress: read it again once done
	case errors.Is(err, errUnsupported):
		return sameAsRead(path, was)
	case err != nil:
		return err
	}
	defer r.Close()
	if leased {
		defer dropLease(r)
	}
	if !sameBytes(r, was) {
		return ErrChanged
	}
	return nil
}

// sameBytes reports whether f, read from its start, holds want.
func sameBytes(f *os.File, want []byte) bool {
	cur, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<62))
	return err == nil && bytes.Equal(cur, want)
}

// putBack undoes an exchange whose displaced file was not the one read: it
// goes back to path. What comes out must be the file swapped in; if a save
// replaced that one meanwhile, the save came out instead and is swapped
// back too, and so on. It returns ErrChanged once path holds the newest
// save, or an error naming the file left under tmp.
func putBack(path, tmp string, ours fs.FileInfo) error {
	expect := ours
	for range 8 {
		putting, err := os.Lstat(tmp)
		if err != nil {
			return fault.IO("put back "+path, err)
		}
		err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
		if errors.Is(err, unix.ENOENT) {
			// path was removed meanwhile: put the file back without
			// replacing anything.
			if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
				return fault.IO("put back "+path+" (its content is in "+tmp+")", err)
			}
			os.Remove(tmp)
			return ErrChanged
		}
		if err != nil {
			return fault.IO("put back "+path+" (its content is in "+tmp+")", err)
		}
		out, err := os.Lstat(tmp)
		if err == nil && os.SameFile(out, expect) {
			os.Remove(tmp)
			if err := SyncDir(filepath.Dir(path)); err != nil {
				return err
			}
			return ErrChanged
		}
		expect = putting
	}
	return fault.IO("put back "+path, errors.New("saved again and again while being put back; the file it held is at "+tmp))
}
