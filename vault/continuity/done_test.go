package continuity

import (
	"errors"
	"testing"

	"github.com/memvault/memvault/vault"
)

// DoneEvent's rule, tried as an agent writes DONE: lines: by number, by id
// alone or at the end of a head's line, by text with other case,
// punctuation and spacing, by a text that goes on after the row's, and
// the texts that must close nothing.
func TestDoneNamesWhatItCloses(t *testing.T) {
	c := newContinuity()
	c.Next = []Item{{ID: "e_n1", Text: "step A first"}, {ID: "e_n2", Text: "deploy"}, {ID: "e_n3", Text: "step A first and then more"}}
	c.Commitments = []Item{{ID: "e_c1", Text: "Ship the billing export by Friday"}}
	c.Blockers = []Item{{ID: "e_b1", Text: "the staging DB credentials are missing", Thread: "project:alpha"}}
	for _, tc := range []struct {
		arg, want string // want: the id closed, "" for none
	}{
		{"1", "e_n1"},
		{"4", "e_c1"}, // commitments are numbered after the next actions
		{"e_b1", "e_b1"},
		{"- the staging DB credentials are missing (project:alpha, `e_b1`)", "e_b1"}, // a head's line, copied
		{"The staging DB credentials are MISSING.", "e_b1"},
		{"  the   staging db credentials, are missing!  ", "e_b1"},
		{"ship the billing-export by friday", "e_c1"},
		{"Step A first", "e_n1"},                               // exact wins over the longer row it starts
		{"step A first and then more, all green", "e_n3"},      // the longest row the text starts with
		{"step A first: verified on CI", "e_n1"},               // starts with a row of three words
		{"deploy", "e_n2"},                                     // a short row: exact only
		{"deploy the docs site", ""},                           // ... never by a prefix
		{"step A", ""},                                         // a part of a row is not the row
		{"step A firstly done", ""},                            // a prefix must end at a word
		{"the staging DB credentials are missing now", "e_b1"}, // a blocker too
		{"fixed the auth bug in login.go:42", ""},
		{"see `e_zz` for what changed", ""}, // a quoted id of nothing open is text
	} {
		ev, closed, err := DoneEvent(c, tc.arg, "2026-03-02")
		if err != nil {
			t.Errorf("done %q: %v", tc.arg, err)
			continue
		}
		got := ""
		if closed {
			got = ev.Links[0]
		}
		if got != tc.want {
			t.Errorf("done %q closes %q, want %q", tc.arg, got, tc.want)
		}
		if tc.want == "e_b1" && ev.Thread != "project:alpha" {
			t.Errorf("done %q: thread %q, want the blocker's", tc.arg, ev.Thread)
		}
	}
	for _, arg := range []string{"0", "5", "-1", "e_nothing"} {
		if _, _, err := DoneEvent(c, arg, "2026-03-02"); !errors.Is(err, vault.ErrNotFound) {
			t.Errorf("done %q: %v, want not found", arg, err)
		}
	}
	if c.OpenKind("e_b1") != "blocker" || c.OpenKind("e_c1") != "commitment" || c.OpenKind("e_n2") != "next action" || c.OpenKind("e_x") != "" {
		t.Error("OpenKind names the wrong list")
	}
}
