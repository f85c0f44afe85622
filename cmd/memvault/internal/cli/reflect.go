package cli

import (
	"context"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/lineage"
)

type reflectOptions struct {
	writeOptions
	rowThreadOptions
	args []string // the JSON, or "-" for stdin
}

func newReflectCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "reflect",
		Usage:     "record a reflection: a JSON object with a \"text\" and optional \"links\" (event ids)",
		ArgsUsage: "JSON | -",
	}
}

func (o *reflectOptions) flags() []ucli.Flag {
	return o.writeFlags(newRowThreadFlag(&o.thread), newGlobalFlag(&o.global))
}

func (o *reflectOptions) setArgs(args []string) { o.args = args }

// prepareReflect reads the JSON and works out the thread before the lock;
// the reflection is checked inside the transaction, by the function a
// REFLECT: line goes through.
func prepareReflect(_ context.Context, opts reflectOptions, e env, v *vault.Vault) (txWork, error) {
	raw, err := e.textArg(opts.args, "reflect")
	if err != nil {
		return txWork{}, err
	}
	thread, fromDir, err := currentThread(e, v, opts.rowThreadOptions)
	if err != nil {
		return txWork{}, err
	}
	return txWork{apply: func(tx *vault.Tx) error {
		_, err := lineage.RecordReflection(tx, thread, raw)
		return err
	}, thread: derived(thread, fromDir)}, nil
}
