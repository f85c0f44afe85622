package web

import (
	"bytes"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// TestTaskListAsGoldmark: the web's own task lists render every input as
// goldmark's extension.TaskList does (the test links the extension; the
// binary does not), including the forms that are no checkbox: a box not
// first in its item, in a paragraph, with another letter, nested, after
// a link, and white space of each kind.
func TestTaskListAsGoldmark(t *testing.T) {
	t.Parallel()
	inputs := []string{
		"- [ ] to do\n- [x] done\n- [X] DONE\n",
		"- [ ]\n- [x]\n- [ ]   spaced\n- [\t] tab\n- [\f] feed\n- [\r] cr\n",
		"- [y] not a box\n- [] empty\n- [  ] two spaces\n- [x]no space\n",
		"[ ] not in a list\n\n- text [x] later\n",
		"1. [x] ordered\n2. [ ] second\n",
		"- [ ] outer\n  - [x] inner\n    - [ ] deeper\n",
		"- [x] [a link](https://example.com) and `code`\n- [link](x) [ ] after\n",
		"- > [ ] quoted\n- para\n\n  [x] second paragraph\n",
		"* [x] star\n+ [ ] plus\n",
		"- [x] e_0123456789abcdefghij and <b>markup</b>\n",
		"- [",
		"- [x",
		"- [x]",
	}
	ours := goldmark.New(goldmark.WithExtensions(taskList{}))
	theirs := goldmark.New(goldmark.WithExtensions(extension.TaskList))
	for _, in := range inputs {
		var a, b bytes.Buffer
		if err := ours.Convert([]byte(in), &a); err != nil {
			t.Fatal(err)
		}
		if err := theirs.Convert([]byte(in), &b); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("%q:\nours   %s\ntheirs %s", in, a.String(), b.String())
		}
	}
	// And through the head's own renderer.
	got := string(markdownHTML([]byte("- [x] shipped\n- [ ] next\n"), func(s string) string { return s }))
	if !strings.Contains(got, `<input checked="" disabled="" type="checkbox"> shipped`) ||
		!strings.Contains(got, `<input disabled="" type="checkbox"> next`) {
		t.Errorf("head's task list:\n%s", got)
	}
}
