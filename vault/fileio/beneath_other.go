//go:build !linux

package fileio

import (
	"io/fs"
	"os"
)

// openat2 is Linux's; elsewhere the caller walks the path.
func openat2(dir, rel string, flag int, perm fs.FileMode) (*os.File, error, bool) {
	return nil, nil, false
}

func statat2(dir, rel string) (fs.FileInfo, error, bool) { return nil, nil, false }
