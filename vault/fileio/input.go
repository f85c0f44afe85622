package fileio

// A file a person (or a harness) names for memvault to read, outside the
// vault: an export to import, a file of tasks, a summary, a transcript.
// Every such read goes through OpenInput or ReadInput, so that none of
// them can block (a named pipe with no writer), read without end
// (/dev/zero), read a folder, or take memory past its limit: the name is
// looked at first (Lstat, then Stat), so a device is never opened; what is
// opened is opened without waiting for a writer (O_NONBLOCK) and checked
// again on the open descriptor (fstat), so a name swapped between the look
// and the open cannot get round it; its size is checked against the limit
// before a byte is read, and the read itself stops at the limit, in case
// the file grows.

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/memvault/memvault/vault/fault"
)

// InputOptions say how OpenInput treats a name.
type InputOptions struct {
	// Max is the largest file accepted, in bytes; 0 accepts any size.
	Max int64
	// NoFollow refuses a symbolic link as the last element of the name (a
	// harness's transcript path); otherwise a link is followed, as a
	// person's shell would, and where it leads is checked.
	NoFollow bool
}

// OpenInput opens path for reading if it is a regular file within
// opts.Max bytes, without ever blocking. subject starts the errors (e.g.
// "import x.json"). A missing file is fault.ErrNotFound; a named pipe, a
// device, a socket, a folder (and, with NoFollow, a symbolic link) or a file
// over the limit is fault.ErrInvalid, in one line that names what it is
// ("not a regular file (a named pipe)"); other failures are fault.ErrIO.
func OpenInput(path, subject string, opts InputOptions) (*os.File, fs.FileInfo, error) {
	look := os.Stat
	if opts.NoFollow {
		look = os.Lstat
	}
	info, err := look(path)
	if err != nil {
		return nil, nil, inputErr(subject, err)
	}
	if err := checkInput(info, subject, opts.Max); err != nil {
		return nil, nil, err
	}
	flag := os.O_RDONLY | syscall.O_NONBLOCK
	if opts.NoFollow {
		flag |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, nil, inputErr(subject, err)
	}
	if info, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, fault.IO(subject, err)
	}
	if err := checkInput(info, subject, opts.Max); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// ReadInput reads the whole of path, opened by OpenInput with a limit of
// max bytes (which must be positive): at most max bytes are ever held, even
// when the file grows while it is read.
func ReadInput(path, subject string, max int64) ([]byte, error) {
	f, info, err := OpenInput(path, subject, InputOptions{Max: max})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, 0, min(info.Size(), max)+1)
	return readLimited(f, data, subject, max)
}

// ReadBounded reads r (a command's standard input) to its end, holding at
// most max bytes: more is fault.ErrInvalid ("over N bytes"), and the read
// stops there, so a pipe without end costs max bytes and no more. When r is
// a file it is looked at first: a regular file over max, a folder, or a
// character device that is neither a terminal nor /dev/null (/dev/zero,
// /dev/urandom: a read without end) is refused before a byte is read.
func ReadBounded(r io.Reader, subject string, max int64) ([]byte, error) {
	if f, ok := r.(*os.File); ok {
		if info, err := f.Stat(); err == nil {
			m := info.Mode()
			switch {
			case m.IsRegular():
				if info.Size() > max {
					return nil, overLimit(subject, max)
				}
			case m.IsDir(), m&fs.ModeCharDevice != 0 && !isTerminal(f.Fd()) && !isDevNull(info):
				return nil, fault.New(fault.ErrInvalid, "%s: not a regular file, a pipe or a terminal (%s)", subject, FileKind(m))
			}
		}
	}
	return readLimited(r, nil, subject, max)
}

// isDevNull reports whether info is /dev/null's.
func isDevNull(info fs.FileInfo) bool {
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(info, null)
}

func readLimited(r io.Reader, data []byte, subject string, max int64) ([]byte, error) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf[:min(int64(len(buf)), max+1-int64(len(data)))])
		data = append(data, buf[:n]...)
		if int64(len(data)) > max {
			return nil, overLimit(subject, max)
		}
		if errors.Is(err, io.EOF) {
			return data, nil
		}
		if err != nil {
			return nil, fault.IO(subject, err)
		}
	}
}

// checkInput refuses what is not a regular file within max bytes.
func checkInput(info fs.FileInfo, subject string, max int64) error {
	if !info.Mode().IsRegular() {
		return fault.New(fault.ErrInvalid, "%s: not a regular file (%s)", subject, FileKind(info.Mode()))
	}
	if max > 0 && info.Size() > max {
		return overLimit(subject, max)
	}
	return nil
}

func overLimit(subject string, max int64) error {
	return fault.New(fault.ErrInvalid, "%s: over %d bytes", subject, max)
}

// inputErr classifies a failed look at or open of an input file.
func inputErr(subject string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		e := fault.IO(subject, err).(*fault.Error)
		e.Class, e.Hint = fault.ErrNotFound, ""
		return e
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EMLINK): // EMLINK: FreeBSD's answer to O_NOFOLLOW
		return fault.New(fault.ErrInvalid, "%s: not a regular file (a symbolic link)", subject)
	case errors.Is(err, syscall.ENXIO), errors.Is(err, syscall.EOPNOTSUPP): // a socket
		return fault.New(fault.ErrInvalid, "%s: not a regular file (a socket)", subject)
	}
	return fault.IO(subject, err)
}

// FileKind names what a mode that is not a regular file's is, for an error.
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "mode " + m.String()
}

// Inside reports whether path, a file a person names for memvault to
// write, would land inside dir (the vault) or be dir itself: its links and
// ".." are resolved as far as the path exists (a file that is a link into
// dir, a folder that is one, a parent that is one), and every folder above
// what it resolves to is compared with dir by device and inode, so a bind
// mount or another spelling of dir's name is caught too. A path whose
// folder does not exist is not inside (the write fails on its own).
func Inside(dir, path string) (bool, error) {
	dinfo, err := os.Stat(dir)
	if err != nil {
		return false, err
	}
	rdir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false, err
	}
	if rdir, err = filepath.Abs(rdir); err != nil {
		return false, err
	}
	p, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	resolved := resolveExisting(p)
	if rel, err := filepath.Rel(rdir, resolved); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return true, nil
	}
	for d := resolved; ; d = filepath.Dir(d) {
		if info, err := os.Stat(d); err == nil && os.SameFile(info, dinfo) {
			return true, nil
		}
		if filepath.Dir(d) == d {
			return false, nil
		}
	}
}

// resolveExisting is p (absolute and clean) with its links resolved as far
// as it exists: the longest prefix that exists, resolved, with the rest
// joined on.
func resolveExisting(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p
	}
	return filepath.Join(resolveExisting(parent), filepath.Base(p))
}
