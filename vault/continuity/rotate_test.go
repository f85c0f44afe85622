package continuity

import (
	"strings"
	"testing"
)

// TestJustCompletedRotatesByAge: an entry done more than 7 days before the
// newest protocol event's day leaves Just Completed (counted in the "…
// more in the ledger" line); the age is read from the ledger's times, so
// the render is the same bytes whatever the clock says.
func TestJustCompletedRotatesByAge(t *testing.T) {
	c := newContinuity()
	c.Done = []Item{
		{ID: "e_1", Text: "eleven days back", Date: "2026-03-01"},
		{ID: "e_2", Text: "exactly seven days back", Date: "2026-03-05"},
		{ID: "e_3", Text: "recorded late with an old date", Date: "2026-02-01"},
		{ID: "e_4", Text: "two days back", Date: "2026-03-10"},
	}
	c.Updated = "2026-03-12T23:59:59.000Z"
	doc := string(renderContinuity(c, 500).Bytes)
	sec := section(doc, SecCompleted)
	for _, want := range []string{"- two days back (2026-03-10)", "- exactly seven days back (2026-03-05)", "- … 2 more in the ledger"} {
		if !strings.Contains(sec, want) {
			t.Errorf("Just Completed lacks %q:\n%s", want, sec)
		}
	}
	for _, gone := range []string{"eleven days back", "recorded late"} {
		if strings.Contains(sec, gone) {
			t.Errorf("Just Completed still shows %q:\n%s", gone, sec)
		}
	}
	if i, j := strings.Index(sec, "two days"), strings.Index(sec, "seven days"); i < 0 || j < i {
		t.Errorf("newest first:\n%s", sec)
	}
	// the same state renders the same bytes: nothing but the ledger's times
	if again := string(renderContinuity(c, 500).Bytes); again != doc {
		t.Error("two renders of one state differ")
	}
	// a newer event moves the window: the seven-day one goes too
	c.Updated = "2026-03-13T00:00:00.000Z"
	if sec := section(string(renderContinuity(c, 500).Bytes), SecCompleted); strings.Contains(sec, "seven days") || !strings.Contains(sec, "… 3 more") {
		t.Errorf("a day later:\n%s", sec)
	}
	// no protocol event dated: nothing rotates
	c.Updated = ""
	if sec := section(string(renderContinuity(c, 500).Bytes), SecCompleted); !strings.Contains(sec, "eleven days back") {
		t.Errorf("no newest day:\n%s", sec)
	}
}

// section is the text under heading ## name, up to the next heading.
func section(doc, name string) string {
	_, rest, ok := strings.Cut(doc, "## "+name+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}
