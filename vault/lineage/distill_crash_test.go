package lineage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
)

// A node whose file reached the disk without its event (a writer killed
// between the two) gets its event when the same node is made again.
func TestNodeFileWithoutEventIsRecorded(t *testing.T) {
	v := testvault.New(t)
	testvault.AppendMessage(t, v, "s1", "the heron migration is done")
	summarize := func(keep bool) (*node.Node, []byte, bool) {
		t.Helper()
		var n *node.Node
		var data []byte
		var created bool
		_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
			var err error
			n, created, err = Summarize(tx, transcript.Ref{Agent: v.Config.Agent, Session: "s1"}, SummaryOptions{})
			if err == nil && !keep {
				data = n.Encode()
				return errors.New("stop before anything is written")
			}
			return err
		})
		if keep && err != nil {
			t.Fatal(err)
		}
		return n, data, created
	}
	// What the node would be, without writing it; then its file alone, as
	// a kill between the file and the ledger leaves it.
	n, data, _ := summarize(false)
	p := filepath.Join(v.Root, filepath.FromSlash(n.Path))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	n2, _, created := summarize(true)
	if n2.ID != n.ID {
		t.Fatalf("the same node got another id: %s, then %s", n.ID, n2.ID)
	}
	if !created {
		t.Fatal("the orphan file's event was not written")
	}
	if _, _, created := summarize(true); created {
		t.Fatal("the node's event was written twice")
	}
	testvault.MustVerify(t, v)
}
