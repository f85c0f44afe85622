package recall

// The files the index is built from (ledger segments, transcript parts,
// nodes, heads), what changed in them past the index's watermarks, and the
// documents each one yields.

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/node"
)

// indexSourcesOf lists every file of the given kinds ('r' ledger segments,
// 'm' transcript parts, 'n' nodes), with its size.
func indexSourcesOf(v *vault.Vault, kinds string) ([]indexSource, error) {
	var out []indexSource
	for _, k := range kinds {
		var got []indexSource
		var err error
		switch k {
		case 'r':
			got, err = segmentSources(v)
		case 'm':
			got, err = transcriptSources(v)
		case 'n':
			got, err = nodeSources(v, nil)
		case 'h':
			got, err = headSources(v)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out, nil
}

// changedSources lists the files of part p (not the transcripts, which
// the journal names) that may hold text past the index's watermarks marks:
// for the lineage every ledger segment (a few hundred at most) and the nodes
// of the month folders that changed; for the heads, every head.
func changedSources(v *vault.Vault, p indexPart, marks map[string]int64) ([]indexSource, error) {
	if p == headsPart {
		return headSources(v)
	}
	segs, err := segmentSources(v)
	if err != nil {
		return nil, err
	}
	nodes, err := nodeSources(v, marks)
	return append(segs, nodes...), err
}

// pastWatermarks lists what of part p may be past the watermarks of meta,
// and the watermarks to read it from (see journalSources).
func pastWatermarks(v *vault.Vault, p indexPart, meta index.Meta) ([]indexSource, map[string]int64, error) {
	if p == transcriptPart {
		sources, from, _ := journalSources(v, readJournal(v, meta.Journal), meta.Watermarks, false)
		return sources, from, nil
	}
	sources, err := changedSources(v, p, meta.Watermarks)
	return sources, meta.Watermarks, err
}

func segmentSources(v *vault.Vault) ([]indexSource, error) {
	segs, _, err := vault.ListSegments(v.Root)
	if err != nil {
		return nil, err
	}
	var out []indexSource
	for _, s := range segs {
		info, err := v.Files().Stat(v.Abs(s.Rel()))
		if err != nil {
			return nil, fault.IO("stat "+s.String(), err)
		}
		out = append(out, indexSource{Rel: s.String(), Kind: 'r', Size: info.Size()})
	}
	return out, nil
}

func transcriptSources(v *vault.Vault) ([]indexSource, error) {
	agents, err := v.Files().ReadDir(filepath.Join(v.Root, "transcripts"))
	if err != nil && !os.IsNotExist(err) {
		return nil, fault.IO("read transcripts", err)
	}
	var out []indexSource
	for _, a := range agents {
		if !a.IsDir() || fileio.CheckName("agent", a.Name()) != nil {
			continue
		}
		files, err := v.Files().ReadDir(filepath.Join(v.Root, "transcripts", a.Name()))
		if err != nil {
			return nil, fault.IO("read transcripts/"+a.Name(), err)
		}
		for _, f := range files {
			if f.IsDir() || !strings.HasSuffix(f.Name(), ".jsonl") || strings.HasPrefix(f.Name(), ".") {
				continue
			}
			info, err := f.Info()
			if err != nil {
				continue
			}
			out = append(out, indexSource{Rel: "transcripts/" + a.Name() + "/" + f.Name(), Kind: 'm', Size: info.Size()})
		}
	}
	return out, nil
}

// nodeSources lists node files by month folder (nodes/<agent>/<yyyy>/<mm>),
// each folder followed by a mark of its mtime (kind 'd', size the mtime in
// nanoseconds, named to sort after the folder's files so that it is saved
// with or after them). A node is written once and a new one changes its
// folder's mtime, so with marks (a usable index's watermarks) a folder
// whose mtime the index recorded is not listed at all.
func nodeSources(v *vault.Vault, marks map[string]int64) ([]indexSource, error) {
	months, err := node.MonthDirs(v.Files())
	if err != nil {
		return nil, err
	}
	var out []indexSource
	for _, dir := range months {
		p := filepath.Join(v.Root, filepath.FromSlash(dir))
		info, err := v.Files().Stat(p)
		if err != nil {
			return nil, fault.IO("read "+dir, err)
		}
		mark := indexSource{Rel: dir + "/" + dirMarkName, Kind: 'd', Size: info.ModTime().UnixNano()}
		if marks != nil && marks[mark.Rel] == mark.Size {
			continue
		}
		entries, err := v.Files().ReadDir(p)
		if err != nil {
			return nil, fault.IO("read "+dir, err)
		}
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") && !strings.HasPrefix(e.Name(), ".") {
				out = append(out, indexSource{Rel: dir + "/" + e.Name(), Kind: 'n', Size: 1})
			}
		}
		out = append(out, mark)
	}
	return out, nil
}

// pending is how many bytes of sources the index has not covered.
func pending(sources []indexSource, marks map[string]int64) int64 {
	var n int64
	for _, s := range sources {
		if s.Kind == 'd' || s.Kind == 'h' {
			// A node folder that changed is listed by every search until
			// the index records it, and a changed head makes its index
			// stale: either is worth a catch-up at once.
			if s.Size != marks[s.Rel] {
				n += catchUpBytes + 1
			}
			continue
		}
		if s.Size > marks[s.Rel] {
			n += s.Size - marks[s.Rel]
		}
	}
	return n
}

// headSources lists MEMORY.md and the thread heads, each with its mtime.
func headSources(v *vault.Vault) ([]indexSource, error) {
	files := []string{vault.MemoryHead}
	kinds, _ := v.Files().ReadDir(filepath.Join(v.Root, "threads"))
	for _, k := range kinds {
		if !k.IsDir() {
			continue
		}
		heads, _ := v.Files().ReadDir(filepath.Join(v.Root, "threads", k.Name()))
		for _, h := range heads {
			if strings.HasSuffix(h.Name(), ".md") && !strings.HasPrefix(h.Name(), ".") {
				files = append(files, "threads/"+k.Name()+"/"+h.Name())
			}
		}
	}
	var out []indexSource
	for _, rel := range files {
		info, err := v.Files().Stat(filepath.Join(v.Root, filepath.FromSlash(rel)))
		if err != nil {
			continue
		}
		out = append(out, indexSource{Rel: rel, Kind: 'h', Size: info.ModTime().UnixNano()})
	}
	return out, nil
}

// headFileDocs splits a head file into sections, one document each, for
// the heads tier. Heads belong to every agent (index.AnyAgent).
func headFileDocs(v *vault.Vault, rel string) []index.Doc {
	data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(rel)))
	if err != nil {
		return nil
	}
	thread := headThread(rel)
	var docs []index.Doc
	for i, sec := range headSections(string(data)) {
		if strings.TrimSpace(sec.text) == "" {
			continue
		}
		docs = append(docs, index.Doc{ID: fmt.Sprintf("h|%s|%d", rel, i), Text: sec.text, Tier: TierHeads,
			Agent: index.AnyAgent, Thread: thread})
	}
	return docs
}

// headThread is the thread key of a head file ("" for MEMORY.md).
func headThread(rel string) string {
	parts := strings.Split(rel, "/")
	if len(parts) == 3 && parts[0] == "threads" {
		return parts[1] + ":" + strings.TrimSuffix(parts[2], ".md")
	}
	return ""
}

type headSectionText struct {
	text string
	line int
}

// headSections splits markdown at its headings; each section keeps its
// heading line.
func headSections(s string) []headSectionText {
	var out []headSectionText
	cur := headSectionText{line: 1}
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "#") && b.Len() > 0 {
			cur.text = b.String()
			out = append(out, cur)
			b.Reset()
			cur = headSectionText{line: i + 1}
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	cur.text = b.String()
	return append(out, cur)
}

// headSection returns section idx of a head file, its thread and line.
func headSection(v *vault.Vault, rel string, idx int) (string, string, int, error) {
	data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(rel)))
	if err != nil {
		return "", "", 0, nil
	}
	secs := headSections(string(data))
	if idx < 0 || idx >= len(secs) {
		return "", "", 0, nil
	}
	return secs[idx].text, headThread(rel), secs[idx].line, nil
}
