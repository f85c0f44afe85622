package memory_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

// TestVerbsRefuse: each verb refuses what it must with its class and its
// words, and a refused verb queues nothing.
func TestVerbsRefuse(t *testing.T) {
	v := testvault.New(t)
	fact := testvault.Remember(t, v, "the cache is warmed first")
	var open *vault.Event
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		var err error
		open, err = memory.OpenCommitment(tx, memory.Input{Text: "ship the notes"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		class error
		want  string
		verb  func(tx *vault.Tx) (*vault.Event, error)
	}{
		{"unknown kind", vault.ErrInvalid, `kind "wish": unknown`, func(tx *vault.Tx) (*vault.Event, error) {
			return memory.Remember(tx, memory.Input{Kind: "wish", Text: "x"})
		}},
		{"empty text", vault.ErrInvalid, "text: empty", func(tx *vault.Tx) (*vault.Event, error) {
			return memory.Remember(tx, memory.Input{Text: "  "})
		}},
		{"data not an object", vault.ErrInvalid, "data: must be a json object", func(tx *vault.Tx) (*vault.Event, error) {
			return memory.Remember(tx, memory.Input{Text: "x", Data: []byte(`[1]`)})
		}},
		{"link to no event", vault.ErrNotFound, "link e_nope: no such event", func(tx *vault.Tx) (*vault.Event, error) {
			return memory.Remember(tx, memory.Input{Text: "x", Links: []string{"e_nope"}})
		}},
		{"link to no node", vault.ErrNotFound, "link n_nope: no such node", func(tx *vault.Tx) (*vault.Event, error) {
			return memory.Remember(tx, memory.Input{Text: "x", Links: []string{"n_nope"}})
		}},
		{"close a fact", vault.ErrConflict, "close " + fact.ID + ": is a fact, not a commitment", func(tx *vault.Tx) (*vault.Event, error) {
			return memory.CloseCommitment(tx, fact.ID, "")
		}},
		{"retract without why", vault.ErrInvalid, "why: empty", func(tx *vault.Tx) (*vault.Event, error) {
			return memory.Retract(tx, fact.ID, "")
		}},
		{"supersede no event", vault.ErrNotFound, "supersede e_nope: no such event", func(tx *vault.Tx) (*vault.Event, error) {
			return memory.Supersede(tx, "e_nope", "y")
		}},
	} {
		_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
			_, err := c.verb(tx)
			if n := len(tx.Events()); err != nil && n != 0 {
				t.Errorf("%s: refused, yet %d events queued", c.name, n)
			}
			return err
		})
		if !errors.Is(err, c.class) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %v %q", c.name, err, c.class, c.want)
		}
	}
	// A commitment closed, then retracted twice: the second is refused.
	var closed *vault.Event
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		var err error
		closed, err = memory.CloseCommitment(tx, open.ID, "done")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if closed.Kind != "commitment.close" || closed.Links[0] != open.ID || closed.Source != "cli" {
		t.Errorf("close queued %+v", closed)
	}
	for i, want := range []string{"", "already retracted by"} {
		_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error { _, err := memory.Retract(tx, fact.ID, "wrong"); return err })
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("retract %d: %v, want %q", i, err, want)
		}
	}
}

// TestSupersedeKeepsKindAndThread: the new version takes over the old
// row's thread and names the kind it replaces.
func TestSupersedeKeepsKindAndThread(t *testing.T) {
	v := testvault.New(t)
	var old, sup *vault.Event
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		var err error
		old, err = memory.Remember(tx, memory.Input{Kind: "decision", Thread: "topic:cache", Text: "warm the cache"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		var err error
		sup, err = memory.Supersede(tx, old.ID, "warm the cache at start")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if sup.Kind != "supersede" || sup.Thread != old.Thread || string(sup.Data) != `{"replaces_kind":"decision"}` {
		t.Errorf("supersede queued %+v (data %s)", sup, sup.Data)
	}
}
