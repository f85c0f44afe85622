package fileio

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/memvault/memvault/vault/fault"
)

// ErrLink is the cause of every refusal to go through a symbolic link
// below a Root; errors.Is finds it under the fault.ErrCorrupt class.
var ErrLink = errors.New("symbolic link")

// Root is a folder below which memvault reaches nothing through a symbolic
// link: every open, read, create, append, mkdir, remove and replace made
// through it refuses a link at the last component of the path (O_NOFOLLOW)
// and in any folder between the root and it. A vault cloned from a remote
// can hold links git checked out (`threads/project -> ~/.ssh`), and a
// vault's files are written by hooks that run unattended: following one
// would read or write outside the vault. A link that stays inside the
// vault is refused all the same: the rule has no exception to get wrong.
//
// The root's own path may pass through links (a vault reached through a
// folder the user linked is the user's choice); they are resolved when an
// operation opens the root, and nothing below it is.
//
// On Linux an open is one openat2 call with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS, which the kernel resolves without a window for a
// folder to be swapped for a link meanwhile; elsewhere, or where openat2
// is missing or filtered, each folder is checked with Lstat and the file
// opened with O_NOFOLLOW. The whole-file writers check the folders, then
// write by the package's own rules (a temporary file renamed over the
// target, which never follows a link at the target): links already in the
// vault are refused; a process racing memvault to plant one between the
// check and the rename already has write access to the vault, which no
// check of memvault's defends against.
//
// Paths given to a Root's methods are absolute paths inside the root, or
// paths relative to it. A refusal names the link's path relative to the
// root; other errors are the system's, with the whole path.
type Root struct {
	dir string
	// walk skips openat2, so that tests run the Lstat walk where the
	// kernel has openat2.
	walk bool
}

// At returns the Root for the folder dir. It does no I/O.
func At(dir string) Root {
	if !filepath.IsAbs(dir) {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
	}
	return Root{dir: filepath.Clean(dir)}
}

// Dir returns the root folder's path.
func (r Root) Dir() string { return r.dir }

// rel turns path into a clean slash-separated path below the root; "" is
// the root itself. A path outside the root is a mistake of the caller's.
func (r Root) rel(path string) (string, error) {
	if r.dir == "" {
		return "", fault.New(fault.ErrInvalid, "%s: no root folder to open it beneath", path)
	}
	rel := path
	if filepath.IsAbs(path) {
		var err error
		if rel, err = filepath.Rel(r.dir, path); err != nil {
			return "", fault.New(fault.ErrInvalid, "%s: not inside %s", path, r.dir)
		}
	}
	rel = filepath.ToSlash(filepath.Clean(rel))
	if rel == ".." || strings.HasPrefix(rel, "../") || strings.HasPrefix(rel, "/") {
		return "", fault.New(fault.ErrInvalid, "%s: not inside %s", path, r.dir)
	}
	if rel == "." {
		rel = ""
	}
	return rel, nil
}

// full is the absolute path of rel.
func (r Root) full(rel string) string { return joinFull(r.dir, rel) }

func joinFull(dir, rel string) string {
	if rel == "" {
		return dir
	}
	return filepath.Join(dir, filepath.FromSlash(rel))
}

// linkError is the refusal of the link at rel.
func linkError(rel string) error {
	e := &fault.Error{Class: fault.ErrCorrupt, Err: ErrLink,
		Msg: rel + ": is a symbolic link; memvault never follows links inside the vault"}
	e.Hint = "replace the link with the file or folder it points to, or remove it (git rm " + rel + "), then run the command again; memvault verify lists every link"
	return e
}

// IsLink reports whether err is the refusal of a symbolic link.
func IsLink(err error) bool { return errors.Is(err, ErrLink) }

// open opens rel with flag (O_NOFOLLOW added) and perm, refusing a link
// anywhere below the root.
func (r Root) open(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	if rel == "" {
		if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC) != 0 {
			return nil, &fs.PathError{Op: "open", Path: r.dir, Err: syscall.EISDIR}
		}
		return os.Open(r.dir)
	}
	var f *os.File
	var err error
	ok := false
	if !r.walk {
		f, err, ok = openat2(r.dir, rel, flag, perm)
	}
	if !ok {
		f, err = r.openWalk(rel, flag, perm)
	}
	if err != nil {
		return nil, r.explain(rel, err)
	}
	return f, nil
}

// openWalk is open without openat2: every folder below the root checked
// with Lstat, the file opened with O_NOFOLLOW.
func (r Root) openWalk(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := r.parentsWalk(rel); err != nil {
		return nil, err
	}
	return os.OpenFile(r.full(rel), flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
}

// parentsWalk checks with Lstat that every folder between the root and
// rel is a folder and not a link.
func (r Root) parentsWalk(rel string) error {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		sub := strings.Join(parts[:i], "/")
		info, err := os.Lstat(r.full(sub))
		switch {
		case err != nil:
			return err
		case info.Mode()&fs.ModeSymlink != 0:
			return linkError(sub)
		case !info.IsDir():
			return &fs.PathError{Op: "open", Path: r.full(rel), Err: syscall.ENOTDIR}
		}
	}
	return nil
}

// explain turns a failed open into the refusal of the link that made it
// fail, when there is one (ELOOP from the kernel, or EMLINK on the BSDs,
// does not say which component was the link); other errors stay as they
// are. A missing file is the common failure and costs nothing more.
func (r Root) explain(rel string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || IsLink(err) {
		return err
	}
	if link, ok := r.findLink(rel); ok {
		return linkError(link)
	}
	return err
}

// findLink returns the first component of rel, from the root down, that is
// a symbolic link.
func (r Root) findLink(rel string) (string, bool) {
	parts := strings.Split(rel, "/")
	for i := 1; i <= len(parts); i++ {
		sub := strings.Join(parts[:i], "/")
		info, err := os.Lstat(r.full(sub))
		if err != nil {
			return "", false
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return sub, true
		}
	}
	return "", false
}

// Open opens path for reading.
func (r Root) Open(path string) (*os.File, error) {
	return r.OpenFile(path, os.O_RDONLY, 0)
}

// OpenFile opens path with flag and perm as os.OpenFile does, except that
// no link is followed. It does not create folders: see MkdirAll.
func (r Root) OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	rel, err := r.rel(path)
	if err != nil {
		return nil, err
	}
	return r.open(rel, flag, perm)
}

// ReadFile reads the whole file at path, as os.ReadFile does.
func (r Root) ReadFile(path string) ([]byte, error) {
	f, err := r.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := 512
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() && info.Size() < 1<<40 {
		size = int(info.Size()) + 1
	}
	buf := make([]byte, 0, size)
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// ReadEnd reads the end of the file at path: its size and its last bytes,
// the window grown until it holds a whole last line (two newlines, or the
// whole file), so finding the last line costs the same on a small or a
// huge file, torn last line or not.
func (r Root) ReadEnd(path string) (size int64, tail []byte, err error) {
	f, err := r.Open(path)
	if err != nil {
		return 0, nil, fault.IO("read "+path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, nil, fault.IO("read "+path, err)
	}
	size = info.Size()
	for window := int64(8 << 10); ; window *= 4 {
		if window > size {
			window = size
		}
		buf := make([]byte, window)
		if _, err := f.ReadAt(buf, size-window); err != nil && err != io.EOF {
			return 0, nil, fault.IO("read "+path, err)
		}
		if window == size || bytes.Count(buf, []byte("\n")) >= 2 {
			return size, buf, nil
		}
	}
}

// ReadDir lists the folder at path, sorted by name, as os.ReadDir does.
// Links in it are listed (their type says so); reading through one is
// refused.
func (r Root) ReadDir(path string) ([]fs.DirEntry, error) {
	f, err := r.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// Walk calls fn for everything below the folder rel (slash separated and
// relative to the root, "" for the root itself), parents before children,
// with p the absolute path. It lists folders as ReadDir does and never
// descends into a link: fn sees the link itself (d.Type() says so). A
// folder that does not exist has nothing to walk. fn may return fs.SkipDir
// to leave a folder out.
func (r Root) Walk(rel string, fn func(p string, d fs.DirEntry) error) error {
	entries, err := r.ReadDir(filepath.Join(r.dir, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		sub := path.Join(rel, e.Name())
		err := fn(filepath.Join(r.dir, filepath.FromSlash(sub)), e)
		if errors.Is(err, fs.SkipDir) {
			continue
		}
		if err != nil {
			return err
		}
		if e.IsDir() {
			if err := r.Walk(sub, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// Stat describes the file at path without following a link: a link there,
// or in a folder above it, is refused.
func (r Root) Stat(path string) (fs.FileInfo, error) {
	rel, err := r.rel(path)
	if err != nil {
		return nil, err
	}
	if rel == "" {
		return os.Stat(r.dir)
	}
	var info fs.FileInfo
	ok := false
	if !r.walk {
		info, err, ok = statat2(r.dir, rel)
	}
	if !ok {
		if err = r.parentsWalk(rel); err == nil {
			info, err = os.Lstat(r.full(rel))
		}
	}
	if err != nil {
		return nil, r.explain(rel, err)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return nil, linkError(rel)
	}
	return info, nil
}

// Check reports a link at path or in a folder above it; a path that does
// not exist is fine. It is for paths handed to code that opens them
// itself (a file lock, the search index's library).
func (r Root) Check(path string) error {
	if _, err := r.Stat(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// MkdirAll creates the folder at path and the folders above it that are
// missing (DirPerm), as os.MkdirAll does, refusing a link on the way.
func (r Root) MkdirAll(path string) error {
	rel, err := r.rel(path)
	if err != nil {
		return err
	}
	if rel == "" {
		return os.MkdirAll(r.dir, DirPerm)
	}
	info, err := r.Stat(rel)
	if err == nil {
		if !info.IsDir() {
			return fault.IO("create "+rel, &fs.PathError{Op: "mkdir", Path: r.full(rel), Err: syscall.ENOTDIR})
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fault.IO("create "+rel, err)
	}
	if err := os.MkdirAll(r.dir, DirPerm); err != nil {
		return fault.IO("create "+r.dir, err)
	}
	parts := strings.Split(rel, "/")
	for i := 1; i <= len(parts); i++ {
		sub := strings.Join(parts[:i], "/")
		// mkdir never follows a link at its last component (it fails with
		// EEXIST), so the Lstat after it tells what is there.
		if err := os.Mkdir(r.full(sub), DirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
			return fault.IO("create "+sub, err)
		}
		info, err := os.Lstat(r.full(sub))
		switch {
		case err != nil:
			return fault.IO("create "+sub, err)
		case info.Mode()&fs.ModeSymlink != 0:
			return linkError(sub)
		case !info.IsDir():
			return fault.IO("create "+sub, &fs.PathError{Op: "mkdir", Path: r.full(sub), Err: syscall.ENOTDIR})
		}
	}
	return nil
}

// prepare readies path for a whole-file write: its folder exists and
// holds no link on the way, and path itself is not a link.
func (r Root) prepare(path string) (string, error) {
	rel, err := r.rel(path)
	if err != nil {
		return "", err
	}
	if rel == "" {
		return "", fault.IO("write "+r.dir, &fs.PathError{Op: "open", Path: r.dir, Err: syscall.EISDIR})
	}
	if dir := filepath.ToSlash(filepath.Dir(rel)); dir != "." {
		if err := r.MkdirAll(dir); err != nil {
			return "", err
		}
	}
	if err := r.Check(rel); err != nil {
		return "", fault.IO("write "+rel, err)
	}
	return r.full(rel), nil
}

// WriteAtomic is the package's WriteAtomic for a path below the root.
func (r Root) WriteAtomic(path string, data []byte) error {
	full, err := r.prepare(path)
	if err != nil {
		return err
	}
	return WriteAtomic(full, data)
}

// WriteAtomicAll is WriteAtomicAll below the root: every path is checked
// as WriteAtomic's is before any file is written.
func (r Root) WriteAtomicAll(files []File) error {
	full := make([]File, len(files))
	for i, f := range files {
		p, err := r.prepare(f.Path)
		if err != nil {
			return err
		}
		full[i] = File{Path: p, Data: f.Data}
	}
	return WriteAtomicAll(full)
}

// WriteCache is the package's WriteCache for a path below the root.
func (r Root) WriteCache(path string, data []byte) error {
	full, err := r.prepare(path)
	if err != nil {
		return err
	}
	return WriteCache(full, data)
}

// Overwrite writes data over the file at path from its start and cuts the
// file to data's length, creating it (FilePerm, its folder with DirPerm)
// only when it is missing: unlike WriteCache, a file that is there is kept,
// so a write creates no file, which costs more than the write on some file
// systems (docs/PERFORMANCE.md, "Writes"). No fsync, and no atomicity: a
// reader meanwhile, or a crash between the write and the cut, can see the
// new bytes followed by the old ones' tail, so it is for small files whose
// readers refuse what they cannot parse, or whose new content is never
// shorter than the old. The file is opened without following a link.
func (r Root) Overwrite(path string, data []byte) error {
	rel, err := r.rel(path)
	if err != nil {
		return err
	}
	// O_NONBLOCK: a named pipe planted there fails the open instead of
	// hanging it; a regular file ignores the flag.
	flag := os.O_WRONLY | os.O_CREATE | syscall.O_NONBLOCK
	f, err := r.open(rel, flag, FilePerm)
	if errors.Is(err, fs.ErrNotExist) {
		if dir := filepath.ToSlash(filepath.Dir(rel)); dir != "." {
			if err := r.MkdirAll(dir); err != nil {
				return err
			}
		}
		f, err = r.open(rel, flag, FilePerm)
	}
	if err != nil {
		return fault.IO("write "+rel, err)
	}
	if info, serr := f.Stat(); serr != nil || !info.Mode().IsRegular() {
		f.Close()
		return fault.IO("write "+rel, &fs.PathError{Op: "open", Path: rel, Err: syscall.EINVAL})
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fault.IO("write "+rel, err)
	}
	return nil
}

// Append appends data, which must be whole lines, to the file at path
// with a single O_APPEND write and syncs it before returning. A crash can
// leave at most a torn last line, which readers ignore and the next writer
// repairs. A new file gets FilePerm, in a folder created with DirPerm when
// missing; the folder is then synced so that the new name is durable too.
// The file is opened without following a link, so a dangling link is not
// created. Errors are classified as fault.ErrIO.
func (r Root) Append(path string, data []byte) error {
	rel, err := r.rel(path)
	if err != nil {
		return err
	}
	dir := filepath.ToSlash(filepath.Dir(rel))
	created := false
	if _, err := r.Stat(rel); errors.Is(err, fs.ErrNotExist) {
		if dir != "." {
			if err := r.MkdirAll(dir); err != nil {
				return err
			}
		}
		created = true
	} else if err != nil {
		return fault.IO("append "+rel, err)
	}
	return appendTo(r.full(rel), data, created, func() (*os.File, error) {
		return r.open(rel, os.O_WRONLY|os.O_APPEND|os.O_CREATE, FilePerm)
	})
}

// Remove removes the file or empty folder at path; a link there is
// refused, not removed, so that the vault stays as it was.
func (r Root) Remove(path string) error {
	rel, err := r.rel(path)
	if err != nil {
		return err
	}
	if _, err := r.Stat(rel); err != nil {
		return err
	}
	return os.Remove(r.full(rel))
}

// RemoveAll removes path and what it holds, as os.RemoveAll does (which
// deletes a link inside without following it); a link at path or above it
// is refused. A path that does not exist is no error.
func (r Root) RemoveAll(path string) error {
	rel, err := r.rel(path)
	if err != nil {
		return err
	}
	if rel == "" {
		return fault.New(fault.ErrInvalid, "%s: refusing to remove the root", r.dir)
	}
	if err := r.Check(rel); err != nil {
		return err
	}
	return os.RemoveAll(r.full(rel))
}

// Truncate cuts the file at path to size bytes.
func (r Root) Truncate(path string, size int64) error {
	f, err := r.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
