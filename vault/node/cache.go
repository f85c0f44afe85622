package node

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/memvault/memvault/vault/fileio"
)

// cacheFile is the derived list of node headers in .state/, one node per
// line of tab-separated fields (decoding 10k JSON objects would cost more
// than the whole of an expand). Nodes are written once, so a cached header
// stays true for as long as its file exists; loading re-reads only files the
// cache does not know.
const cacheFile = ".state/nodes.tsv"

var (
	tsvEscape   = strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n")
	tsvUnescape = strings.NewReplacer("\\\\", "\\", "\\t", "\t", "\\n", "\n")
)

// FieldNeedle is what finds the nodes with s as a whole field of their
// cache line (a session key, say) when given to Lookup: s escaped as the
// cache writes it, between the tabs around a field.
func FieldNeedle(s string) string { return "\t" + tsvEscape.Replace(s) + "\t" }

func (n *Node) cacheLine() string {
	span := "\t\t"
	if n.Span != nil {
		span = fmt.Sprintf("%s\t%d\t%d", n.Span.Path, n.Span.From, n.Span.To)
	}
	f := []string{n.Path, n.ID, n.Kind, n.Agent, n.Session, n.Harness, strings.Join(n.Threads, ","),
		strings.Join(n.Children, ","), n.Created, span, n.Title, strings.Join(n.Supersedes, ",")}
	for i, x := range f {
		if i != 9 {
			f[i] = tsvEscape.Replace(x)
		}
	}
	return strings.Join(f, "\t")
}

func parseCacheLine(line string) (*Node, bool) {
	f := strings.Split(line, "\t")
	if len(f) == 13 { // written before supersedes (issue 34)
		f = append(f, "")
	}
	if len(f) != 14 {
		return nil, false
	}
	for i := range f {
		if strings.IndexByte(f[i], '\\') >= 0 {
			f[i] = tsvUnescape.Replace(f[i])
		}
	}
	split := func(s string) []string {
		if s == "" {
			return []string{}
		}
		return strings.Split(s, ",")
	}
	n := &Node{Path: f[0], ID: f[1], Kind: f[2], Agent: f[3], Session: f[4], Harness: f[5],
		Threads: split(f[6]), Children: split(f[7]), Created: f[8], Title: f[12]}
	if f[13] != "" {
		n.Supersedes = split(f[13])
	}
	if f[9] != "" {
		n.Span = &Span{Path: f[9]}
		n.Span.From, _ = strconv.Atoi(f[10])
		n.Span.To, _ = strconv.Atoi(f[11])
	}
	return n, n.ID != "" && n.Path != ""
}

// cacheLinesWith returns the node lines of the cache that hold one of
// needles (all of them for nil), in the cache's order. Each needle is
// searched in the whole text at once, so a lookup around one node costs a
// few passes of a byte search, not a look at each of 10,000 lines.
func cacheLinesWith(data []byte, needles []string) []string {
	if needles == nil {
		var out []string
		for _, line := range strings.Split(string(data), "\n") {
			if line != "" && line[0] != '#' {
				out = append(out, line)
			}
		}
		return out
	}
	starts := map[int]bool{}
	for _, nd := range needles {
		if nd == "" {
			continue
		}
		for _, at := range findAll(data, []byte(nd)) {
			starts[bytes.LastIndexByte(data[:at], '\n')+1] = true
		}
	}
	order := make([]int, 0, len(starts))
	for st := range starts {
		order = append(order, st)
	}
	sort.Ints(order)
	out := make([]string, 0, len(order))
	for _, st := range order {
		line := data[st:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		if len(line) > 0 && line[0] != '#' {
			out = append(out, string(line))
		}
	}
	return out
}

// findAll returns the offsets of every occurrence of needle in data.
func findAll(data, needle []byte) []int {
	var out []int
	for off := 0; ; {
		i := bytes.Index(data[off:], needle)
		if i < 0 {
			return out
		}
		out = append(out, off+i)
		off += i + len(needle)
	}
}

// saveCache writes the cache: a "#dir\t<folder>\t<mtime>" line for each
// month folder, which sort first, then a line for each node. A failure
// leaves the old cache, which the next load finds stale and rebuilds.
func saveCache(files fileio.Root, ix *Index, dirs map[string]int64) {
	lines := make([]string, 0, len(ix.Nodes)+len(dirs))
	for d, mt := range dirs {
		lines = append(lines, fmt.Sprintf("#dir\t%s\t%d", d, mt))
	}
	for _, n := range ix.Nodes {
		lines = append(lines, n.cacheLine())
	}
	sort.Strings(lines)
	_ = files.WriteAtomic(filepath.Join(files.Dir(), cacheFile), []byte(strings.Join(lines, "\n")+"\n"))
}
