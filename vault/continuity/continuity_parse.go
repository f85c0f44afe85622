package continuity

// CONTINUITY.md read back (the parser of `memvault continuity status`),
// and the templates a file never rendered is merged against.

import (
	"fmt"
	"strconv"
	"strings"
)

// ParsedContinuity is CONTINUITY.md read back: what a person and memvault
// wrote into it, section by section.
type ParsedContinuity struct {
	Updated   string              `json:"updated,omitempty"`
	Phase     string              `json:"phase,omitempty"`
	Iteration string              `json:"iteration,omitempty"`
	Sections  map[string][]string `json:"sections"` // protocol section → its non-empty lines
	Unknown   map[string][]string `json:"unknown,omitempty"`
	Warnings  []string            `json:"warnings"`
}

// parseContinuity reads CONTINUITY.md. It never fails and never drops
// text: a section it does not know is kept under Unknown with a warning,
// and so is text outside any section.
func parseContinuity(data []byte) *ParsedContinuity {
	p := &ParsedContinuity{Sections: map[string][]string{}, Unknown: map[string][]string{}, Warnings: []string{}}
	cur := ""
	known := true
	fence := false
	seen := map[string]bool{}
	for _, raw := range strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n") {
		line := strings.TrimRight(raw, " \t")
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(line, "## ") {
			title := strings.TrimSpace(strings.ReplaceAll(strings.TrimPrefix(line, "## "), "<!-- memvault:keep -->", ""))
			cur, known = canonicalSection(title)
			if !known {
				p.Warnings = append(p.Warnings, fmt.Sprintf("CONTINUITY.md: section %q is not part of the protocol; its text is kept as it is", title))
			} else if seen[cur] {
				p.Warnings = append(p.Warnings, fmt.Sprintf("CONTINUITY.md: section %q appears twice; both are kept", cur))
			}
			seen[cur] = true
			continue
		}
		if trim == "" || strings.HasPrefix(trim, "<!--") && strings.HasSuffix(trim, "-->") {
			continue
		}
		if cur == "" {
			switch {
			case strings.HasPrefix(trim, "# "):
			case strings.HasPrefix(trim, "Last Updated:"):
				p.Updated = strings.TrimSpace(strings.TrimPrefix(trim, "Last Updated:"))
			case strings.HasPrefix(trim, "Current Phase:"):
				p.Phase = strings.TrimSpace(strings.TrimPrefix(trim, "Current Phase:"))
			case strings.HasPrefix(trim, "Current Iteration:"):
				p.Iteration = strings.TrimSpace(strings.TrimPrefix(trim, "Current Iteration:"))
			default:
				p.Unknown["(before the first section)"] = append(p.Unknown["(before the first section)"], trim)
			}
			continue
		}
		if !known {
			p.Unknown[cur] = append(p.Unknown[cur], trim)
			continue
		}
		if trim == "- none" || strings.HasPrefix(trim, "- none:") {
			continue
		}
		p.Sections[cur] = append(p.Sections[cur], trim)
	}
	if len(p.Unknown["(before the first section)"]) > 0 {
		p.Warnings = append(p.Warnings, "CONTINUITY.md: text before the first section is not part of the protocol; it is kept as it is")
	}
	for _, s := range ContinuitySections {
		if !seen[s] {
			p.Warnings = append(p.Warnings, fmt.Sprintf("CONTINUITY.md: section %q is missing", s))
		}
	}
	if len(p.Unknown) == 0 {
		p.Unknown = nil
	}
	return p
}

func canonicalSection(title string) (string, bool) {
	t := strings.ToLower(strings.Join(strings.Fields(title), " "))
	for _, s := range ContinuitySections {
		if strings.ToLower(s) == t {
			return s, true
		}
	}
	if s, ok := sectionAliases[t]; ok {
		return s, true
	}
	return title, false
}

// items strips list markers from a section's lines.
func items(lines []string) []string {
	out := []string{}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "- "), strings.HasPrefix(l, "* "):
			l = l[2:]
		default:
			if i := strings.Index(l, ". "); i > 0 && i <= 3 {
				if _, err := strconv.Atoi(l[:i]); err == nil {
					l = l[i+2:]
				}
			}
		}
		out = append(out, l)
	}
	return out
}

// Template is what `memvault edit CONTINUITY.md` starts from when
// the file does not exist, and the base of the first merge when such a file
// was never rendered (continuity_write.go). It is the render of a protocol
// with nothing in it: the same title, header and sections, in the same
// order, each its heading alone. A section the person leaves alone is then
// exactly what the render had, and one they fill in merges as their edit of
// it, without a conflict.
func Template() []byte { return renderContinuity(newContinuity(), 500).Bytes }

// noneContinuityTemplate is the template of the versions before empty
// sections lost their "- none" (and the header its default phase). A file
// made from it and never rendered merges against it, so its "- none" lines
// are not taken for a person's.
const noneContinuityTemplate = `# CONTINUITY

<!-- memvault: working memory, rendered from the ledger; hand edits are merged, not lost. See docs/CONTINUITY.md. -->

Last Updated: never
Current Phase: planning
Current Iteration: 0

## Active Goal

- none: set one with memvault goal

## Current Task

- none

## Just Completed

- none

## Next Actions

- none

## Active Blockers

- none

## Key Decisions

- none

## Mistakes & Learnings

- none

## Working Context

- none

## Files Being Modified

- none
`

// legacyContinuityTemplate is the template of earlier versions (`##
// Blockers`, no Files Being Modified). A file made from it and never
// rendered merges against it, so its sections are not taken for deletions.
const legacyContinuityTemplate = `# CONTINUITY

## Active Goal

## Current Task

## Just Completed

## Next Actions

## Blockers

## Key Decisions

## Mistakes & Learnings

## Working Context
`
