package gitrepo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/memvault/memvault/vault/fault"
)

// Size is how much a .git folder holds, as gc reports it before and after:
// the loose objects a commit adds, the packs gc turns them into, and the
// whole folder, both as data (the sum of the files' sizes) and as disk
// space (what du counts). The two differ most before a gc: a loose object
// of a few hundred bytes still takes a whole block of the file system
// (4 KiB on most), so thousands of them take several times their size.
type Size struct {
	LooseObjects int   `json:"loose_objects"`
	LooseBytes   int64 `json:"loose_bytes"`      // the loose objects' data
	LooseDisk    int64 `json:"loose_disk_bytes"` // the blocks they take
	Packs        int   `json:"packs"`
	PackBytes    int64 `json:"pack_bytes"` // .pack, .idx and their companions
	GitBytes     int64 `json:"git_bytes"`  // all of .git: the sum of its files' sizes
	// DiskBytes is all of .git as `du -s` counts it: the blocks allocated
	// to every file, folder and link below it and to .git itself, a file
	// with several hard links once.
	DiskBytes int64 `json:"disk_bytes"`
}

// Measure sizes a .git folder: loose objects, packs, and the whole. It
// takes a path rather than a Repo so that a benchmark can size a copy. A
// path reached through a symbolic link (a vault opened through a linked
// folder) is sized where the link leads, as du sizes `.git/`.
func Measure(gitDir string) (Size, error) {
	var s Size
	if real, err := filepath.EvalSymlinks(gitDir); err == nil {
		gitDir = real
	}
	objects := filepath.Join(gitDir, "objects")
	linked := map[[2]uint64]bool{} // files with several links, counted once
	err := filepath.WalkDir(gitDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		disk := diskBytes(info, linked)
		s.DiskBytes += disk
		if !e.Type().IsRegular() {
			return nil
		}
		s.GitBytes += info.Size()
		rel, _ := filepath.Rel(objects, p)
		dir, name := filepath.Split(rel)
		switch {
		case dir == "pack/":
			s.PackBytes += info.Size()
			if strings.HasSuffix(name, ".pack") {
				s.Packs++
			}
		case len(dir) == 3 && isObjectName(name):
			s.LooseObjects++
			s.LooseBytes += info.Size()
			s.LooseDisk += disk
		}
		return nil
	})
	if err != nil {
		return s, fault.IO("gc: measure .git", err)
	}
	return s, nil
}

// diskBytes is the space du counts for a file: its allocated blocks, in
// the 512-byte units stat reports them in whatever the file system's block
// size; 0 for the second and later sight of a file with several links.
func diskBytes(info fs.FileInfo, linked map[[2]uint64]bool) int64 {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return info.Size()
	}
	if !info.IsDir() && st.Nlink > 1 {
		key := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
		if linked[key] {
			return 0
		}
		linked[key] = true
	}
	return int64(st.Blocks) * 512
}

// isObjectName reports whether name is a loose object's file name below
// its fan-out folder: 38 hexadecimal digits.
func isObjectName(name string) bool {
	if len(name) != 38 {
		return false
	}
	for _, c := range name {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// LooseSample is the fan-out folder EstimateLoose counts, the one git's
// own `gc --auto` samples: objects are spread evenly over the 256 folders
// by their hash, so one folder times 256 is a fair estimate.
const LooseSample = "17"

// EstimateLoose estimates the loose objects of a .git folder from one
// fan-out folder (LooseSample), as git's gc --auto does: one directory read,
// about 1/256 of the objects, where counting them all would walk the whole
// object store. With sizes it also estimates the disk space they take, at
// the cost of a stat per object in the folder. A repository without the
// folder has ~0.
func EstimateLoose(gitDir string, sizes bool) (objects int, disk int64) {
	dir := filepath.Join(gitDir, "objects", LooseSample)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !isObjectName(e.Name()) {
			continue
		}
		objects++
		if !sizes {
			continue
		}
		if info, err := e.Info(); err == nil {
			disk += diskBytes(info, map[[2]uint64]bool{})
		}
	}
	return objects * 256, disk * 256
}

// PastAuto reports whether git's `gc --auto` would find too many loose
// objects for threshold (its gc.auto), by git's own rule: more than
// threshold/256, rounded up, in the sampled folder. One directory read.
func PastAuto(gitDir string, threshold int) bool {
	n, _ := EstimateLoose(gitDir, false)
	return n/256 > (threshold+255)/256
}
