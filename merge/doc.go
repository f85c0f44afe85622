// Package merge reconciles the three versions of a memvault head file:
// base (the last render memvault wrote), ours (the file as it is now, hand
// edits included) and theirs (the new render). Hand edits must survive a
// refresh, and a conflict must never be dropped silently, so the package
// reports conflicts instead of guessing.
//
// # Line merge
//
// Lines is a three-way line merge that gives the same bytes and the same
// conflict count as `git merge-file -p ours base theirs` (default level,
// "merge" conflict style; the diff3 and zdiff3 styles and the
// --ours/--theirs/--union resolutions are also offered). Matching git
// exactly means people see the conflicts they would see from git, and
// tests can use git as the oracle. To get there it reimplements, in Go,
// the algorithm of git's xdiff rather than using a generic diff:
//
//   - the line diff is Myers' O(ND) search with xdiff's pre-pass (common
//     head and tail trimmed; lines with no match on the other side, and
//     frequent lines inside runs of such lines, set aside), its cost limits
//     and snake heuristic for large inputs, and its sliding of changed
//     groups (down as far as possible, then back up to align with a change
//     on the other side). Where several minimal diffs exist this picks the
//     one git picks; go-diff's line mode picks another on about 5% of small
//     random inputs with repeated lines, which moves conflict markers;
//   - the two diffs against base are walked together. Changes on one side
//     are taken; identical changes on both sides are taken once; changes
//     that overlap or touch (edits of adjacent lines, insertions at the same
//     place) form a conflict;
//   - each conflict is refined: ours and theirs are diffed against each
//     other inside it and only the differing parts stay conflicts; then two
//     conflicts separated by three lines or fewer, or by lines holding no
//     ASCII letter or digit, are joined into one (git's "zealous alnum"
//     level). The diff3 styles show the base and so skip refinement;
//   - conflict markers are "<<<<<<< label", "=======", ">>>>>>> label" (and
//     "||||||| label" for diff3), seven characters by default. A side whose
//     last line lacks a newline gets one before the next marker, and the
//     markers end in CRLF when the surrounding lines of both sides do.
//
// Unlike git, Lines merges input containing NUL bytes instead of refusing
// it as binary.
//
// # Markdown merge
//
// Markdown first cuts each version into sections at its top-level ATX and
// setext headings, found with goldmark's parser; a section runs from its
// heading line to the next heading, and the text before the first heading
// is a section too. Sections are slices of the original bytes, so text
// nobody changed comes out byte for byte; markdown is never re-rendered.
// Sections are matched across versions by heading path: the text and level
// of each enclosing heading and of the section's own heading, plus its rank
// among siblings with the same heading. A YAML front matter block at the
// top stays in the preamble.
//
// Each section is then resolved: changed on one side only, that side wins;
// changed on both, Lines merges it, and if that conflicts the section keeps
// our text and is reported with both alternatives (and the marked-up line
// merge), so the caller can leave the person's words in the file and store
// the rendered alternative elsewhere. Sections listed as append-only
// (MarkdownOptions.AppendOnly, e.g. "Just Completed", "Log") are merged by
// union when both sides changed them: our lines in order, then their lines
// that neither ours nor base holds (a line in base that we lack was deleted
// by hand and stays deleted). A section added on one side is kept, placed
// after the section it follows on that side. A section deleted on one side
// and unchanged on the other stays deleted; deleted on one side and changed
// on the other, it is reported and the file follows ours. With
// MarkdownOptions.KeepInsertions, a section whose line merge conflicts
// while one side only inserted lines takes the other side's version with
// those lines put in where they were inserted, so nothing is reported and
// nothing is lost (their lines first, ours after, where both inserted at
// one place).
//
// With MarkdownOptions.MergeRows, what still conflicts is merged row by
// row (mergeRows): our text, with the lines they added since base put in
// (unless we hold them, or changed their row: MarkdownOptions.RowKey
// names a line's row) and the lines they removed taken out where we left
// them as they were; a row both changed keeps our text and is reported
// in SectionConflict.Rows, and the section is merged all the same. A
// section we deleted and they changed comes back with only the rows they
// added; one we renamed (our new heading over lines of its body) takes
// their changes under our heading. Lines are compared without line ends
// there, and KeepInsertions places lines that way too, so a side an
// editor turned CRLF merges like the original. SectionConflict.Mark
// names a conflict by our side of it, so a caller can tell the same
// conflict met again from a new one.
//
// With MarkdownOptions.Peers the two sides are two people's files (a git
// merge between clones of a vault, through memvault's merge driver): a
// conflicted section is written with git's markers instead of our text, a
// section deleted on one side and edited on the other as the edit against
// nothing between markers, and the keep marker pins nothing.
//
// # Keep marker
//
// A person pins a section by writing the HTML comment
//
//	<!-- memvault:keep -->
//
// anywhere in it, for example at the end of its heading line. Markdown then
// never rewrites that section, nor any deeper section nested under it, and
// never deletes it: our text wins without a conflict. The marker counts
// only in ours (the person's file); removing it unpins the section. In the
// preamble it pins the preamble alone.
package merge
