package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/scope"
)

// exportFormats are the forms memvault export writes.
var exportFormats = []string{"md", "json"}

type exportOptions struct {
	format                 string
	formatSet              bool // --format was given
	thread, session, since string
	messages               int
	output                 string // the file to write; "" for stdout
	json                   bool
}

func newExportCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "export",
		Usage: "write a self-contained export of a thread or a session: heads, events, nodes, messages, with a manifest of SHA-256 hashes",
		Description: "md is for a person to read; json is for a tool, and is what memvault import reads into\n" +
			"another vault after checking every hash. Without -o the export goes to stdout; with -o the\n" +
			"file is written (mode 0600) and stdout says what it holds. docs/EXPORT.md has the format.",
	}
}

func (o *exportOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "format", Value: "md", Usage: "md (for a person) or json (for a tool, importable)", Destination: &o.format, Action: markSet[string](&o.formatSet)},
		&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, Usage: "export this thread", Destination: &o.thread},
		&ucli.StringFlag{Name: "session", Usage: "export this session", Destination: &o.session},
		&ucli.StringFlag{Name: "since", Usage: "only events at or after DATE (2026-11-22, RFC 3339, or 7d / 12h ago); the events they need come too", Destination: &o.since},
		&ucli.IntFlag{Name: "messages", Value: ops.DefaultExportMessages, Usage: "at most the last N messages of each session (0: all; json imports only whole transcripts)", Destination: &o.messages},
		&ucli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the export to FILE instead of stdout", Destination: &o.output},
		&ucli.BoolFlag{Name: "json", Usage: "print JSON: the export itself without -o (as --format json), the report with -o", Destination: &o.json},
	}
}

// query is the export the options ask for, and its format.
func (o exportOptions) query() (q ops.ExportQuery, format string, err error) {
	format = o.format
	if err := checkChoice("export", "format", format, exportFormats); err != nil {
		return q, "", err
	}
	if o.json && o.output == "" {
		if o.formatSet && format != "json" {
			return q, "", usagef("export: --json without -o prints the export as JSON; it cannot be --format %s", format)
		}
		format = "json"
	}
	q = ops.ExportQuery{Session: o.session, Messages: o.messages}
	if o.thread != "" {
		th, err := vault.ParseThread(o.thread)
		if err != nil {
			return q, "", err
		}
		q.Thread = th.String()
	}
	if o.since != "" {
		t, err := ops.ParseSince(o.since, time.Now())
		if err != nil {
			return q, "", err
		}
		q.Since = t
	}
	return q, format, nil
}

func runExport(_ context.Context, opts exportOptions, e env, v *vault.Vault) error {
	q, format, err := opts.query()
	if err != nil {
		return err
	}
	if q.Thread == "" && q.Session == "" {
		if q.Thread, err = exportDirThread(e, v); err != nil {
			return err
		}
	}
	if err := outsideVault(v, "export: -o", opts.output); err != nil {
		return err
	}
	ex, err := ops.BuildExport(v, q)
	if err != nil {
		return err
	}
	var data []byte
	if format == "json" {
		if data, err = json.MarshalIndent(ex, "", "  "); err != nil {
			return err
		}
		data = append(data, '\n')
	} else {
		data = ops.ExportMarkdown(ex)
	}
	out := opts.output
	if out == "" {
		_, err := e.stdout.Write(data)
		return err
	}
	if err := fileio.WriteKeepMode(out, data, 0o600); err != nil {
		return fault.IO("export: write "+out, err)
	}
	rep := exportReport{File: out, Format: format, Bytes: len(data), Events: len(ex.Events), Nodes: len(ex.Nodes),
		Transcripts: len(ex.Transcripts), Heads: len(ex.Heads), Manifest: ex.ManifestSHA256}
	if opts.json {
		return printJSON(e.stdout, rep)
	}
	fmt.Fprintf(e.stdout, "%s: %s export, %d events, %d nodes, %d transcripts, %d heads (manifest sha256 %s)\n",
		out, format, rep.Events, rep.Nodes, rep.Transcripts, rep.Heads, rep.Manifest)
	return nil
}

// exportDirThread is the thread an export given neither --thread nor
// --session exports: MEMVAULT_THREAD (a harness's session sets it), else
// the working directory's, by the rule of the readers
// (docs/RETRIEVAL.md, "The current thread"), said on stderr as the other
// commands say it. With none, or one the vault holds nothing of, it is a
// one-line usage error naming the flags.
func exportDirThread(e env, v *vault.Vault) (string, error) {
	if named := os.Getenv("MEMVAULT_THREAD"); named != "" {
		th, err := vault.ParseThread(named)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(e.stderr, "memvault: thread %s (from MEMVAULT_THREAD; --thread T or --session S for another)\n", th)
		return th.String(), nil
	}
	wd, _ := os.Getwd() // no working directory, no thread of it
	thread, known := "", false
	if wd != "" {
		var err error
		if thread, known, err = scope.WorkThread(v, wd); err != nil {
			return "", err
		}
	}
	if thread == "" {
		return "", &usageError{msg: "export: no thread from the working directory: want --thread T or --session S",
			hint: "memvault threads lists the vault's threads"}
	}
	if !known {
		return "", &usageError{msg: "export: the working directory's thread " + thread + " holds nothing: want --thread T or --session S",
			hint: "memvault threads lists the vault's threads"}
	}
	fmt.Fprintf(e.stderr, "memvault: thread %s (from the working directory; --thread T or --session S for another)\n", thread)
	return thread, nil
}

// exportReport is what export -o prints about the file it wrote.
type exportReport struct {
	File        string `json:"file"`
	Format      string `json:"format"`
	Bytes       int    `json:"bytes"`
	Events      int    `json:"events"`
	Nodes       int    `json:"nodes"`
	Transcripts int    `json:"transcripts"`
	Heads       int    `json:"heads"`
	Manifest    string `json:"manifest_sha256"`
}

// maxExportBytes is the largest export import reads.
const maxExportBytes = 1 << 30

type importOptions struct {
	writeOptions          // only --json: an import writes the export's own events
	args         []string // FILE, or "-" for stdin
}

func newImportCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "import",
		Usage:     "import an export (memvault export --format json) into this vault, after checking every hash",
		ArgsUsage: "FILE | -",
		Description: "Every hash is checked before the lock is taken: a changed export is refused (exit 6)\n" +
			"and nothing is written. The events keep their ids and times and are sealed onto this\n" +
			"vault's chain in one transaction; what the vault holds already is skipped. A harness's\n" +
			"transcript is imported with memvault transcript import. docs/EXPORT.md has the details.",
	}
}

func (o *importOptions) flags() []ucli.Flag { return []ucli.Flag{newJSONFlag(&o.json)} }

func (o *importOptions) setArgs(args []string) { o.args = args }

func prepareImport(_ context.Context, opts importOptions, e env, _ *vault.Vault) (txWork, error) {
	if len(opts.args) != 1 {
		return txWork{}, usagef("import: want exactly one FILE (or - for stdin)")
	}
	name := opts.args[0]
	var data []byte
	var err error
	if name == "-" {
		data, err = fileio.ReadBounded(e.stdin, "import: stdin", maxExportBytes)
	} else {
		data, err = fileio.ReadInput(name, "import: "+name, maxExportBytes)
	}
	if err != nil {
		return txWork{}, err
	}
	ex, err := ops.ParseExport(name, data)
	if err != nil {
		return txWork{}, err
	}
	var res *ops.ImportResult
	return txWork{
		apply: func(tx *vault.Tx) (err error) {
			res, err = ops.Import(tx, ex)
			return err
		},
		report: func(r *vault.Result) error {
			if opts.json {
				return printJSON(e.stdout, res)
			}
			if res.Events+res.Nodes+res.Transcripts == 0 {
				fmt.Fprintf(e.stdout, "%s: nothing new: the vault holds all %d items already\n", name, res.Skipped)
				return nil
			}
			fmt.Fprintf(e.stdout, "%s: imported %d events, %d nodes, %d transcript parts; %s already here (commit %s)\n",
				name, res.Events, res.Nodes, res.Transcripts, strconv.Itoa(res.Skipped), vault.ShortHash(r.Commit))
			return nil
		},
	}, nil
}

// outsideVault refuses out, a file a person names for a command to write,
// when it lands inside the vault (links and ".." resolved, fileio.Inside):
// the vault's files are written by transactions only, and a write over
// MEMORY.md or memvault.toml would destroy a hand edit or break every
// later command. what names the flag in the error.
func outsideVault(v *vault.Vault, what, out string) error {
	if out == "" {
		return nil
	}
	in, err := fileio.Inside(v.Root, out)
	if err != nil {
		return fault.IO(what+" "+out, err)
	}
	if in {
		e := fault.New(fault.ErrInvalid, "%s %s: inside the vault %s, whose files only memvault's transactions write", what, out, v.Root)
		return e.WithHint("write the file outside the vault")
	}
	return nil
}
