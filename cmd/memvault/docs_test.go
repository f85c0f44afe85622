package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinksResolve holds every relative link in the repository's
// markdown (README, docs/, fixtures/) to a file inside the repository, and
// a link with a #fragment to a heading of the file it names: a doc that
// sends a new user to a file outside the clone, or to a section since
// renamed, fails here rather than in their hands.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{} // path relative to root → text
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			docs[filepath.ToSlash(rel)] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := docs["README.md"]; !ok || len(docs) < 5 {
		t.Fatalf("found %d markdown files under %s: has the layout changed?", len(docs), root)
	}
	checked := 0
	for name, text := range docs {
		for _, l := range markdownLinks(text) {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			checked++
			path, frag, _ := strings.Cut(l.target, "#")
			target := name
			if path != "" {
				target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(name), path)))
			}
			if target == ".." || strings.HasPrefix(target, "../") || filepath.IsAbs(path) {
				t.Errorf("%s:%d: link %q leaves the repository", name, l.line, l.target)
				continue
			}
			if _, err := os.Stat(filepath.Join(root, target)); err != nil {
				t.Errorf("%s:%d: link %q: %s does not exist", name, l.line, l.target, target)
				continue
			}
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if !headingAnchors(docs[target])[frag] {
				t.Errorf("%s:%d: link %q: %s has no heading with the anchor #%s", name, l.line, l.target, target, frag)
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d links: is the link pattern still right?", checked)
	}
}

type docLink struct {
	line   int
	target string
}

var (
	linkPattern = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	codeSpan    = regexp.MustCompile("`[^`]*`")
)

// markdownLinks finds inline links outside fenced blocks and code spans.
func markdownLinks(text string) []docLink {
	var out []docLink
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range linkPattern.FindAllStringSubmatch(line, -1) {
			out = append(out, docLink{line: i + 1, target: m[1]})
		}
	}
	return out
}

// headingAnchors computes the anchors GitHub gives a file's headings:
// lower case, punctuation other than '-' and '_' dropped, spaces to '-',
// a repeated anchor numbered -1, -2, ….
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
