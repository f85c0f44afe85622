package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/lineage"
)

func newReflectCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "reflect",
		Usage:     "record a reflection: a JSON object with a \"text\" and optional \"links\" (event ids)",
		ArgsUsage: "JSON | -",
		Flags:     writeFlags(rowThreadFlag, globalFlag),
	}
}

// prepareReflect reads the JSON and works out the thread before the lock;
// the reflection is checked inside the transaction, by the function a
// REFLECT: line goes through.
func prepareReflect(c *ucli.Context, v *vault.Vault) (txWork, error) {
	raw, err := textArg(c, "reflect")
	if err != nil {
		return txWork{}, err
	}
	thread, fromDir, err := legacyCurrentThread(c, v)
	if err != nil {
		return txWork{}, err
	}
	return txWork{apply: func(tx *vault.Tx) error {
		_, err := lineage.RecordReflection(tx, thread, raw)
		return err
	}, thread: derived(thread, fromDir)}, nil
}
