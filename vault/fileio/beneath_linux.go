package fileio

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openat2 opens rel below dir in one call that refuses every symbolic
// link on the way (RESOLVE_NO_SYMLINKS) and any escape from dir
// (RESOLVE_BENEATH). ok is false where the kernel has no openat2 (before
// Linux 5.6) or a sandbox filters it: the caller then walks the path.
func openat2(dir, rel string, flag int, perm fs.FileMode) (f *os.File, err error, ok bool) {
	fd, err, ok := openat2fd(dir, rel, flag|unix.O_NOFOLLOW, perm)
	if !ok || err != nil {
		return nil, err, ok
	}
	return os.NewFile(uintptr(fd), joinFull(dir, rel)), nil, true
}

// statat2 is Stat through an O_PATH descriptor: with O_NOFOLLOW a link at
// rel opens as the link itself, which the caller refuses.
func statat2(dir, rel string) (info fs.FileInfo, err error, ok bool) {
	fd, err, ok := openat2fd(dir, rel, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if !ok || err != nil {
		return nil, err, ok
	}
	f := os.NewFile(uintptr(fd), joinFull(dir, rel))
	defer f.Close()
	info, err = f.Stat()
	return info, err, true
}

func openat2fd(dir, rel string, flag int, perm fs.FileMode) (fd int, err error, ok bool) {
	root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}, true
	}
	defer unix.Close(root)
	how := unix.OpenHow{
		Flags:   uint64(flag | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	if flag&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		how.Mode = uint64(perm.Perm())
	}
	for {
		fd, err = unix.Openat2(root, rel, &how)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	switch {
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM), errors.Is(err, unix.E2BIG):
		return -1, nil, false
	case err != nil:
		return -1, &fs.PathError{Op: "open", Path: joinFull(dir, rel), Err: err}, true
	}
	return fd, nil, true
}
