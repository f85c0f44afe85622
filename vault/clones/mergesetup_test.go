package clones

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gitrepo"
)

func TestEnsureMergeSetup(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".memory")
	v, _, err := vault.Init(root)
	if err != nil {
		t.Fatal(err)
	}
	// A vault made before the drivers: a .gitattributes of the person's own.
	_, err = v.Update(vault.TxOptions{Command: "test"}, func(tx *vault.Tx) error {
		tx.WriteFile(vault.MustRel(gitrepo.GitattributesFile), []byte("*.png binary"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := gitrepo.MergeDriversStatus(root); ok {
		t.Error("status is ok without the attributes")
	}
	bin := "/usr/local/bin/memvault"
	pending, err := gitrepo.MergeSetupPending(root, bin)
	if err != nil || strings.Join(pending, " ") != ".git/config .gitattributes" {
		t.Fatalf("pending: %v %v", pending, err)
	}
	head, _ := v.Head()
	changed, err := EnsureMergeSetup(v, bin)
	if err != nil || strings.Join(changed, " ") != ".git/config .gitattributes" {
		t.Fatalf("ensure: %v %v", changed, err)
	}
	data, _ := os.ReadFile(filepath.Join(root, gitrepo.GitattributesFile))
	if !strings.HasPrefix(string(data), "*.png binary\n# memvault:") || gitrepo.WithAttributes(data) != nil {
		t.Errorf(".gitattributes:\n%s", data)
	}
	if now, _ := v.Head(); now == head {
		t.Error("nothing was committed")
	}
	if changed, err := EnsureMergeSetup(v, bin); err != nil || len(changed) > 0 {
		t.Errorf("second run: %v %v", changed, err)
	}
}
