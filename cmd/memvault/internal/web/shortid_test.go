package web

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

// labelRE finds an id's label where a person reads it: the text of an
// element, the id and nothing else.
var labelRE = regexp.MustCompile(`>→?([en]_[0-9a-z]{4,26})<`)

// TestShortIDsUnique: events written in one burst share the first ten
// characters of their ids (a millisecond); every id a page labels names
// one object of the vault, and no label is shorter than the pages' usual
// twelve characters.
func TestShortIDsUnique(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	var burst []*vault.Event
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		for i := range 40 {
			in := memory.Input{Thread: "project:shop", Text: fmt.Sprintf("burst row %d", i)}
			ev, err := memory.Remember(tx, in)
			if i%2 == 1 {
				ev, err = memory.OpenCommitment(tx, in)
			}
			if err != nil {
				return err
			}
			burst = append(burst, ev)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := heads.Refresh(v, heads.RefreshOptions{Trigger: "render", Memory: true}); err != nil {
		t.Fatal(err)
	}
	shared := 0
	for _, ev := range burst[1:] {
		if ev.ID[:shortLen] == burst[0].ID[:shortLen] {
			shared++
		}
	}
	if shared == 0 {
		t.Skip("the burst's ids share no twelve-character prefix on this machine")
	}
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, r := range st.Rows {
		all = append(all, r.ID)
	}
	f := serve(t, v, false)
	checked := 0
	for path, name := range map[string]string{"/": "overview", "/timeline": "timeline", "/timeline?bookkeeping=1": "timeline",
		"/heads/MEMORY.md": "head", "/heads/threads/project/shop.md": "head", "/recall?q=burst": "recall"} {
		body := f.page(path, name)
		for _, m := range labelRE.FindAllStringSubmatch(body, -1) {
			label := m[1]
			checked++
			n := 0
			for _, id := range all {
				if strings.HasPrefix(id, label) {
					n++
				}
			}
			if n != 1 || len(label) < shortLen {
				t.Errorf("%s: the label %s names %d of the vault's ids, want 1, with %d characters or more", path, label, n, shortLen)
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d labels checked", checked)
	}
	// Sorted neighbours: one longer than the longest prefix shared.
	x := &shortIDs{sorted: []string{"e_01aaaaaaaaaa1", "e_01aaaaaaaaaa2x", "e_01aaaaaaaaaa2y", "e_01b"}}
	for id, want := range map[string]string{"e_01aaaaaaaaaa1": "e_01aaaaaaaaaa1", "e_01aaaaaaaaaa2x": "e_01aaaaaaaaaa2x",
		"e_01b": "e_01b", "abcdef0123456789": "abcdef012345", "e_01zzzzzzzzzzzzz": "e_01zzzzzzzz"} {
		if got := x.label(id); got != want {
			t.Errorf("label(%s) = %s, want %s", id, got, want)
		}
	}
}
