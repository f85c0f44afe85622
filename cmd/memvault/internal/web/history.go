package web

import (
	"regexp"
	"strings"
	"sync"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
)

// A head's history as a person reads it (docs/WEB.md, "A head's
// history"): each version the diff of what it changed in the memory,
// not a list of "rendered" commits: the lines of memory it added and
// removed, each under its section, a line that only moved no change. A
// version whose change is only to what is not memory (blank lines,
// headings, the render's HTML comments, CONTINUITY.md's "Last Updated:"
// and "Current Iteration:" lines, trailing spaces, order) is a render
// that changed nothing: it is left out and counted, and `?history=all`
// lists it too. The line diff of the file is one link away.

// historyLines is how many changed lines a version shows; its full diff
// is one link away.
const historyLines = 12

// historyEntry is one version of a head and what it changed.
type historyEntry struct {
	ops.HeadVersion
	Prev           string // the version before, for the full diff; "" when none was read
	Created        bool   // the first version: every line added
	Removed        bool   // the commit removed the file
	Noise          bool   // it changed nothing of the memory (shown with ?history=all)
	Added, Deleted int
	Lines          []itemChange // the changed lines, at most historyLines
	More           int          // changed lines past those
}

// itemChange is a line of the memory added or removed: its section, its
// text without the list marker and the id, and the id it names.
type itemChange struct {
	Class   string // add, del
	Section string
	Text    string
	ID      string
}

// item is one line of a head's memory under its section.
type item struct{ Section, Line string }

// idSuffix is the id a render puts after a row's text, " (`e_…`)".
var idSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("\\s*\\(`?[en]_[0-9a-z]{26}`?\\)\\s*$") })

// backtickedID is an id the render wrote in backticks inside a line (a
// drill-down line opens with its node's): the change links it instead.
var backtickedID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`[en]_[0-9a-z]{26}`") })

// listMarker is a Markdown list item's marker and task box.
var listMarker = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:[-*+]|[0-9]+[.)])\s+(?:\[[ xX]\]\s+)?`) })

// memoryItems reads a head's text into its lines of memory, each under
// the section heading above it. Left out as not memory: blank lines, the
// headings themselves (they are the sections), the render's HTML
// comments, CONTINUITY.md's "Last Updated:" and "Current Iteration:"
// lines, trailing spaces.
func memoryItems(text []byte) []item {
	var out []item
	section := ""
	for _, line := range strings.Split(string(text), "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "",
			strings.HasPrefix(t, "<!--") && strings.HasSuffix(t, "-->"),
			strings.HasPrefix(t, "Last Updated:"),
			strings.HasPrefix(t, "Current Iteration:"):
			continue
		case strings.HasPrefix(t, "#"):
			section = strings.TrimSpace(strings.TrimLeft(t, "#"))
			continue
		}
		out = append(out, item{section, strings.TrimRight(line, " \t\r")})
	}
	return out
}

// changesBetween is what changed from the memory before to after: the
// lines after holds more often than before (added, in after's order) and
// those it holds less often (removed, in before's order). A line that
// only moved is no change.
func changesBetween(before, after []item) (added, removed []item) {
	count := map[item]int{}
	for _, it := range before {
		count[it]++
	}
	for _, it := range after {
		if count[it] > 0 {
			count[it]--
			continue
		}
		added = append(added, it)
	}
	for _, it := range before { // what is left of before's count was not matched
		if count[it] > 0 {
			count[it]--
			removed = append(removed, it)
		}
	}
	return added, removed
}

// change is the line a person reads of an added or removed item.
func change(class string, it item) itemChange {
	text := strings.TrimSpace(idSuffix().ReplaceAllString(it.Line, ""))
	text = strings.TrimSpace(backtickedID().ReplaceAllString(listMarker().ReplaceAllString(text, ""), ""))
	return itemChange{Class: class, Section: it.Section, ID: idRE().FindString(it.Line), Text: text}
}

// headHistory turns the versions of a head (newest first) into entries:
// each diffed against the version before it, the renders that changed
// nothing counted in noise and, unless all, left out. complete says the
// oldest version is the file's first.
func headHistory(v *vault.Vault, versions []ops.HeadVersion, complete, all bool) (out []historyEntry, noise int) {
	items := map[string][]item{}
	read := func(blob string) []item {
		if blob == "" {
			return nil
		}
		it, ok := items[blob]
		if !ok {
			data, _ := v.Repo.Blob(blob)
			it = memoryItems(data)
			items[blob] = it
		}
		return it
	}
	for i, hv := range versions {
		e := historyEntry{HeadVersion: hv, Removed: hv.Blob == ""}
		var before []item
		switch {
		case i+1 < len(versions):
			e.Prev = versions[i+1].Hash
			before = read(versions[i+1].Blob)
		case complete:
			e.Created = true
		default: // older versions than were read: nothing to diff with
			out = append(out, e)
			continue
		}
		added, removed := changesBetween(before, read(hv.Blob))
		e.Added, e.Deleted = len(added), len(removed)
		for _, it := range added {
			e.Lines = append(e.Lines, change("add", it))
		}
		for _, it := range removed {
			e.Lines = append(e.Lines, change("del", it))
		}
		if len(e.Lines) > historyLines {
			e.More, e.Lines = len(e.Lines)-historyLines, e.Lines[:historyLines]
		}
		e.Noise = e.Added == 0 && e.Deleted == 0 && !e.Removed
		if e.Noise {
			noise++
			if !all {
				continue
			}
		}
		out = append(out, e)
	}
	return out, noise
}
