package clones

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/vaulttest"
)

// Two clones each condense the same closed week over the sessions each
// had (docs/LINEAGE.md, "Cadence"): after they sync, the week has two
// week nodes that count, so it is due again, and each clone's cadence
// writes the same node (same id, same bytes) over both, superseding
// them; after the next sync the two clones hold one week node that
// counts, the same one, reaching both sessions, and a further run writes
// nothing.
func TestTwoClonesCondenseOneWeek(t *testing.T) {
	a, b := twoClones(t)
	monday := time.Date(2020, 1, 20, 0, 0, 0, 0, time.UTC) // week 2020-W03 has closed
	session := func(v *vault.Vault, s string, at time.Time) string {
		t.Helper()
		ref := transcript.Ref{Agent: v.Config.Agent, Session: s}
		var n *node.Node
		if _, err := v.Update(vault.TxOptions{Session: s}, func(tx *vault.Tx) error {
			_, _, err := tx.AppendText(ref, []transcript.Message{
				{Role: transcript.RoleUser, Text: "work on " + s + " please, all of it", TS: at},
				{Role: transcript.RoleAssistant, Text: "Worked on " + s + ", all of it.", TS: at.Add(time.Minute)},
			})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := v.Update(vault.TxOptions{Session: s}, func(tx *vault.Tx) error {
			var err error
			n, _, err = lineage.Summarize(tx, ref, lineage.SummaryOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return n.ID
	}
	cadence := func(v *vault.Vault) []*node.Node {
		t.Helper()
		rep, err := lineage.RunCadence(v, vault.TxOptions{Command: "test cadence"}, monday)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Condensed
	}
	sync := func(v *vault.Vault) {
		t.Helper()
		if _, err := Sync(v, SyncOptions{Engine: SyncEngineGoGit}); err != nil {
			t.Fatal(err)
		}
	}
	weeks := func(v *vault.Vault) (*node.Index, []*node.Node) {
		t.Helper()
		ix, err := node.Load(v.Files())
		if err != nil {
			t.Fatal(err)
		}
		var out []*node.Node
		for _, n := range ix.Select(node.Filter{Kind: node.Condensed}) {
			if strings.HasPrefix(n.Title, "2020-W03:") {
				out = append(out, n)
			}
		}
		return ix, out
	}
	sa := session(a, "on-a", time.Date(2020, 1, 15, 9, 0, 0, 0, time.UTC))
	sb := session(b, "on-b", time.Date(2020, 1, 16, 9, 0, 0, 0, time.UTC))
	if got := cadence(a); len(got) != 2 {
		t.Fatalf("a condensed %d nodes, want its day and the week", len(got))
	}
	if got := cadence(b); len(got) != 2 {
		t.Fatalf("b condensed %d nodes, want its day and the week", len(got))
	}
	sync(a)
	sync(b)
	sync(a)
	if _, ws := weeks(a); len(ws) != 2 {
		t.Fatalf("after the sync a holds %d week nodes that count, want both clones' 2", len(ws))
	}
	ma, mb := cadence(a), cadence(b)
	if len(ma) != 1 || len(mb) != 1 || ma[0].ID != mb[0].ID || len(ma[0].Supersedes) != 2 {
		t.Fatalf("the merged week: a wrote %v, b wrote %v; want the same node superseding both", ma, mb)
	}
	sync(a)
	sync(b)
	sync(a)
	for _, v := range []*vault.Vault{a, b} {
		ix, ws := weeks(v)
		if len(ws) != 1 || ws[0].ID != ma[0].ID {
			t.Fatalf("%s: %d week nodes count, want the one both wrote", v.Root, len(ws))
		}
		var leaves []string
		for _, d := range ws[0].Children {
			leaves = append(leaves, ix.Nodes[d].Children...)
		}
		slices.Sort(leaves)
		if want := []string{min(sa, sb), max(sa, sb)}; !slices.Equal(leaves, want) {
			t.Errorf("%s: the week reaches %v, want %v", v.Root, leaves, want)
		}
		if got := cadence(v); len(got) != 0 {
			t.Errorf("%s: condensed again: %d nodes", v.Root, len(got))
		}
		testvault.MustVerify(t, v)
		vaulttest.Fsck(t, v.Root)
	}
}
