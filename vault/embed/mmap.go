package embed

import (
	"syscall"

	"github.com/memvault/memvault/vault/codec"
)

// mapTail maps the tail of the cache's file read-only (the file is
// replaced by rename, never written in place, so the mapping stays the
// file that was opened); nil when it cannot be mapped, and the tail is
// then read a block at a time.
func mapTail(d *codec.Decoder) (mapping, tail []byte) {
	f, off, n := d.TailFile()
	if f == nil || n <= 0 || off+n > 1<<40 {
		return nil, nil
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(off+n), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil
	}
	return m, m[off : off+n : off+n]
}

// unmap lets go of what mapTail mapped.
func unmap(mapping []byte) {
	_ = syscall.Munmap(mapping)
}
