package heads

// Heads rendered before issue 34 wrote a placeholder under each empty
// section ("- none"; CONTINUITY.md's goal "- none: set one with memvault
// goal"). Renders now leave an empty section as its heading alone. Where
// the last render, the base of a merge, still holds those lines, a person
// who replaced one with their own line would conflict with the render
// dropping it (both changed that line), and one who wrote under it would
// keep the placeholder forever. So before such a base is merged, the
// placeholders are taken out of it, as a render today would have written
// it, and out of the same sections of the file: memvault's line, not the
// person's. What the person wrote then merges as an insertion.

import "bytes"

// placeholderLines are the lines earlier renders wrote under an empty
// section.
var placeholderLines = map[string]bool{"- none": true, "- none: set one with memvault goal": true}

// dropPlaceholders returns base and ours without the placeholder lines of
// the sections base left empty. Bases without any are returned as they
// are, so the merge of a head rendered today reads nothing more.
func dropPlaceholders(base, ours []byte) ([]byte, []byte) {
	if !bytes.Contains(base, []byte("\n- none")) {
		return base, ours
	}
	empty := map[string]bool{}
	base = stripPlaceholders(base, func(heading string, lines [][]byte, i int) bool {
		// Memvault's own: heading, blank line, placeholder.
		if i >= 2 && len(bytes.TrimSpace(lines[i-1])) == 0 && string(bytes.TrimRight(lines[i-2], "\r\n")) == heading {
			empty[heading] = true
			return true
		}
		return false
	})
	if len(empty) == 0 || ours == nil {
		return base, ours
	}
	done := map[string]bool{}
	ours = stripPlaceholders(ours, func(heading string, _ [][]byte, _ int) bool {
		if empty[heading] && !done[heading] {
			done[heading] = true
			return true
		}
		return false
	})
	return base, ours
}

// stripPlaceholders drops the placeholder lines drop says yes to (given
// the heading of their section, the lines and the line's index). A line
// dropped at the end of its section takes the blank line before it along,
// so "## X\n\n- none\n\n## Y" becomes "## X\n\n## Y", as a render of the
// empty section is today.
func stripPlaceholders(doc []byte, drop func(heading string, lines [][]byte, i int) bool) []byte {
	lines := bytes.SplitAfter(doc, []byte("\n"))
	gone := make([]bool, len(lines))
	heading := ""
	for i, l := range lines {
		t := string(bytes.TrimRight(l, "\r\n"))
		if bytes.HasPrefix(l, []byte("#")) {
			heading = t
			continue
		}
		if heading == "" || !placeholderLines[t] || !drop(heading, lines, i) {
			continue
		}
		gone[i] = true
		endsSection := i+1 >= len(lines) || len(bytes.TrimSpace(lines[i+1])) == 0 || bytes.HasPrefix(lines[i+1], []byte("#"))
		if endsSection && i >= 2 && len(bytes.TrimSpace(lines[i-1])) == 0 && !gone[i-1] {
			gone[i-1] = true
		}
	}
	var out bytes.Buffer
	out.Grow(len(doc))
	for i, l := range lines {
		if !gone[i] {
			out.Write(l)
		}
	}
	return out.Bytes()
}
