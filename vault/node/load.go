package node

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// Load loads the node index of the vault whose files are files. The cache
// records each month folder's mtime next to the headers of its nodes; a
// folder whose mtime is unchanged has had no file added or removed, so its
// headers are taken from the cache without listing it. Only changed
// folders are listed, and only files the cache does not know are read.
// Nodes are written once; a hand edit of a node's front matter is not
// picked up until its folder changes (or the cache under .state/ is
// deleted).
func Load(files fileio.Root) (*Index, error) {
	return Lookup(files, nil, nil)
}

// Lookup is Load keeping only the nodes whose cache line contains one of
// needles (nil keeps all): when the cache is fresh, the other lines are
// never decoded, so a lookup around one node costs a byte search of the
// cache. When then is not nil, the cache is searched a second time for
// needles and the needles then returns from the first result: a node's
// neighbours for one read of the cache.
func Lookup(files fileio.Root, needles []string, then func(*Index) []string) (*Index, error) {
	pick, err := Picker(files)
	if err != nil {
		return nil, err
	}
	ix := pick(needles)
	if then != nil {
		if more := then(ix); len(more) > 0 {
			ix = pick(append(needles, more...))
		}
	}
	return ix, nil
}

// Picker reads the node cache, rebuilding it first if a month folder
// changed, and returns what selects from it the nodes whose cache line
// holds one of needles (nil: every node): for a caller that looks up
// many times in one go (recall, a session per summary hit), the cache is
// read once.
func Picker(files fileio.Root) (func(needles []string) *Index, error) {
	// Kept as bytes: a copy of the cache into a string cost more than the
	// search of it.
	data, _ := files.ReadFile(filepath.Join(files.Dir(), cacheFile))
	// The folder lines ("#dir\t<folder>\t<mtime>") sort first.
	cachedDirs := map[string]int64{}
	for rest := data; bytes.HasPrefix(rest, []byte("#dir\t")); {
		line, next, _ := bytes.Cut(rest, []byte("\n"))
		dir, mt, _ := strings.Cut(strings.TrimPrefix(string(line), "#dir\t"), "\t")
		m, _ := strconv.ParseInt(mt, 10, 64)
		cachedDirs[dir] = m
		rest = next
	}
	months, err := MonthDirs(files)
	if err != nil {
		return nil, err
	}
	dirs := map[string]int64{}
	fresh := len(months) == len(cachedDirs)
	for _, dir := range months {
		info, err := files.Stat(filepath.Join(files.Dir(), filepath.FromSlash(dir)))
		if err != nil {
			return nil, fault.IO("read "+dir, err)
		}
		dirs[dir] = info.ModTime().UnixNano()
		if old, ok := cachedDirs[dir]; !ok || old != dirs[dir] {
			fresh = false
		}
	}
	if fresh {
		return func(needles []string) *Index {
			ix := newIndex()
			for _, line := range cacheLinesWith(data, needles) {
				if n, ok := parseCacheLine(line); ok {
					ix.Add(n)
				}
			}
			return ix
		}, nil
	}
	all, err := rebuild(files, data, months)
	if err != nil {
		return nil, err
	}
	saveCache(files, all, dirs)
	return func(needles []string) *Index {
		if needles == nil {
			return all
		}
		ix := newIndex()
		for _, n := range all.Nodes {
			line := n.cacheLine()
			if slices.ContainsFunc(needles, func(nd string) bool { return strings.Contains(line, nd) }) {
				ix.Add(n)
			}
		}
		return ix
	}, nil
}

// rebuild lists the month folders and indexes every node in them, taking
// the headers the cache (data) has and reading only the files it lacks.
func rebuild(files fileio.Root, data []byte, months []string) (*Index, error) {
	known := map[string]*Node{}
	for _, line := range strings.Split(string(data), "\n") {
		if n, ok := parseCacheLine(line); ok {
			known[n.Path] = n
		}
	}
	all := newIndex()
	for _, dir := range months {
		entries, err := files.ReadDir(filepath.Join(files.Dir(), filepath.FromSlash(dir)))
		if err != nil {
			return nil, fault.IO("read "+dir, err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".md") || strings.HasPrefix(name, ".") {
				continue
			}
			rel := dir + "/" + name
			if n, ok := known[rel]; ok {
				all.Add(n)
				continue
			}
			data, err := files.ReadFile(filepath.Join(files.Dir(), filepath.FromSlash(rel)))
			if err != nil {
				return nil, fault.IO("read "+rel, err)
			}
			n, err := Parse(data, true)
			if err != nil || n.ID != strings.TrimSuffix(name, ".md") {
				continue // not a node memvault can use; verify reports it
			}
			n.Path = rel
			all.Add(n)
		}
	}
	return all, nil
}

// MonthDirs lists the nodes/<agent>/<yyyy>/<mm> folders, as paths
// relative to the vault.
func MonthDirs(files fileio.Root) ([]string, error) {
	var out []string
	list := func(rel string) ([]string, error) {
		entries, err := files.ReadDir(filepath.Join(files.Dir(), filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fault.IO("read "+rel, err)
		}
		var names []string
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, e.Name())
			}
		}
		return names, nil
	}
	agents, err := list("nodes")
	if err != nil {
		return nil, err
	}
	for _, a := range agents {
		years, err := list("nodes/" + a)
		if err != nil {
			return nil, err
		}
		for _, y := range years {
			ms, err := list("nodes/" + a + "/" + y)
			if err != nil {
				return nil, err
			}
			for _, m := range ms {
				out = append(out, "nodes/"+a+"/"+y+"/"+m)
			}
		}
	}
	return out, nil
}

// Read returns the full node n names (an index's header), with its body.
func Read(files fileio.Root, n *Node) (*Node, error) {
	data, err := files.ReadFile(filepath.Join(files.Dir(), filepath.FromSlash(n.Path)))
	if err != nil {
		return nil, fault.IO("read "+n.Path, err)
	}
	full, err := Parse(data, false)
	if err != nil {
		return nil, &fault.Error{Class: fault.ErrCorrupt, Msg: n.Path + ": " + err.Error()}
	}
	full.Path = n.Path
	return full, nil
}
