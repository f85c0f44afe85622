package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/memvault/memvault/vault/lineage"

	"github.com/memvault/memvault/hooks/transcript"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/recall"

	ucli "github.com/urfave/cli/v2"
)

var (
	requiredSession   = &ucli.StringFlag{Name: "session", EnvVars: []string{"MEMVAULT_SESSION"}, Usage: "session key (required)"}
	sessionThreadFlag = &ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, EnvVars: []string{"MEMVAULT_THREAD"},
		Usage: "thread the session belongs to (recorded once, scopes recall)"}
)

type transcriptAppendOptions struct {
	ref    vault.TranscriptRef
	msgs   []transcript.Message
	thread string // bound to the session when set
	json   bool
}

type transcriptImportOptions struct {
	ref     vault.TranscriptRef
	format  transcript.Format
	file    string
	harness string
	thread  string
	json    bool
}

type transcriptShowOptions struct {
	ref      vault.TranscriptRef
	from, to int
	limit    int  // at most this many messages; 0 for all
	tail     bool // the last limit messages, not the first (no --from or --to)
	json     bool
}

func newTranscriptCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "transcript",
		Usage: "store and read raw session transcripts (the lossless substrate)",
		Subcommands: []*ucli.Command{
			{
				Name:      "append",
				Usage:     "append a message, or generic JSON messages one per line on stdin",
				ArgsUsage: "[TEXT]",
				Flags: []ucli.Flag{requiredSession, harnessFlag, jsonFlag, sessionThreadFlag,
					&ucli.StringFlag{Name: "role", Usage: "user, assistant, tool or system (with TEXT)"},
					&ucli.StringFlag{Name: "speaker", Usage: "who spoke within the role (default: the role)"},
				},
			},
			{
				Name:      "import",
				Usage:     "import a harness transcript file; only what is new is added",
				ArgsUsage: "FILE",
				Flags: []ucli.Flag{requiredSession, harnessFlag, jsonFlag, sessionThreadFlag,
					&ucli.StringFlag{Name: "format", Usage: "the file's format (required)"},
				},
			},
			{
				Name:  "show",
				Usage: "print a session's messages",
				Flags: []ucli.Flag{requiredSession, jsonFlag,
					&ucli.IntFlag{Name: "from", Value: 1, Usage: "first message number"},
					&ucli.IntFlag{Name: "to", Usage: "last message number (default: the end)"},
					limitFlag("messages: the last ones, or the first from --from", 0),
				},
			},
		},
	}
}

// transcriptRef resolves the agent and the --session flag.
func transcriptRef(c *ucli.Context, v *vault.Vault) (vault.TranscriptRef, error) {
	agent, err := agentOf(c, v)
	if err != nil {
		return vault.TranscriptRef{}, err
	}
	s := c.String("session")
	if s == "" {
		return vault.TranscriptRef{}, usagef("transcript %s: --session is required", c.Command.Name)
	}
	return vault.TranscriptRef{Agent: agent, Session: s}, nil
}

// runTranscriptAppend reads the messages before the lock is taken (stdin
// may be slow), then appends them in one transaction.
func runTranscriptAppend(c *ucli.Context, v *vault.Vault) (txWork, error) {
	opts, err := newTranscriptAppendOptions(c, v)
	if err != nil {
		return txWork{}, err
	}
	var from, to int
	apply := func(tx *vault.Tx) error {
		var err error
		if from, to, err = tx.AppendText(opts.ref, opts.msgs); err != nil {
			return err
		}
		if opts.thread != "" {
			return tx.BindSession(opts.ref, opts.thread)
		}
		return nil
	}
	report := func(*vault.Result) error {
		if opts.json {
			return printJSON(c.App.Writer, map[string]any{"agent": opts.ref.Agent, "session": opts.ref.Session, "from": from, "to": to})
		}
		fmt.Fprintf(c.App.Writer, "%s: messages %d-%d\n", opts.ref.Path(), from, to)
		return nil
	}
	return txWork{apply: apply, report: report}, nil
}

func newTranscriptAppendOptions(c *ucli.Context, v *vault.Vault) (transcriptAppendOptions, error) {
	ref, err := transcriptRef(c, v)
	if err != nil {
		return transcriptAppendOptions{}, err
	}
	opts := transcriptAppendOptions{ref: ref, thread: c.String("thread"), json: c.Bool("json")}
	if c.NArg() > 0 {
		role := transcript.Role(c.String("role"))
		if role == "" {
			return opts, usagef("transcript append: --role is required with TEXT")
		}
		text, err := textArg(c, "text")
		if err != nil {
			return opts, err
		}
		opts.msgs = []transcript.Message{{Role: role, Speaker: c.String("speaker"), Text: text}}
		return opts, nil
	}
	opts.msgs, err = stdinMessages(c.App.Reader)
	return opts, err
}

// stdinMessages reads generic JSON messages, one per line.
func stdinMessages(r io.Reader) ([]transcript.Message, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("transcript append: read stdin: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, usagef("transcript append: no TEXT and nothing on stdin")
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	res, err := transcript.ParseBytes(transcript.Generic, data, transcript.Cursor{}, transcript.Options{NoRedact: true})
	if err != nil {
		return nil, err
	}
	if res.Stats.Invalid > 0 || len(res.Stats.Unknown) > 0 {
		return nil, usagef("transcript append: stdin: want one generic JSON message per line ({\"role\",\"text\",…}); %d lines were not", res.Stats.Invalid+len(res.Stats.Unknown))
	}
	return res.Messages, nil
}

func newTranscriptImportOptions(c *ucli.Context, v *vault.Vault) (transcriptImportOptions, error) {
	ref, err := transcriptRef(c, v)
	if err != nil {
		return transcriptImportOptions{}, err
	}
	if c.NArg() != 1 {
		return transcriptImportOptions{}, usagef("transcript import: want exactly one FILE")
	}
	if c.String("format") == "" {
		return transcriptImportOptions{}, usagef("transcript import: --format is required: %s", oneOf(formatNames()))
	}
	if err := checkChoice("transcript import", "format", c.String("format"), formatNames()); err != nil {
		return transcriptImportOptions{}, err
	}
	format, err := transcript.ParseFormat(c.String("format"))
	if err != nil {
		return transcriptImportOptions{}, usagef("%v", err)
	}
	return transcriptImportOptions{ref: ref, format: format, file: c.Args().First(), harness: c.String("harness"),
		thread: c.String("thread"), json: c.Bool("json")}, nil
}

// runTranscriptImport manages its own writes: lineage.Import takes the lock
// and commits what is new, then the index catches up.
func runTranscriptImport(c *ucli.Context) error {
	v, err := openVault(c)
	if err != nil {
		return err
	}
	opts, err := newTranscriptImportOptions(c, v)
	if err != nil {
		return err
	}
	stop := startProgress(envOf(c), v, opts.json)
	defer stop()
	rep, err := lineage.Import(v, vault.TxOptions{Agent: opts.ref.Agent, Harness: opts.harness}, opts.ref, opts.format, opts.file, opts.thread)
	if err != nil {
		return err
	}
	if rep.Added > 0 {
		// Best effort: recall finds the text either way, from the files.
		_, _ = recall.CatchUpIndex(v, 0)
	}
	stop()
	gcAdvice(envOf(c), v)
	if opts.json {
		return printJSON(c.App.Writer, rep)
	}
	printImport(c.App.Writer, opts.ref, rep)
	return nil
}

func printImport(w io.Writer, t vault.TranscriptRef, rep *lineage.ImportReport) {
	if rep.Added == 0 {
		fmt.Fprintf(w, "nothing new in %s (%d lines read", rep.Source, rep.Stats.Lines)
	} else {
		fmt.Fprintf(w, "imported %d messages into %s, messages %d-%d (%d lines read", rep.Added, t.Path(), rep.From, rep.To, rep.Stats.Lines)
	}
	if rep.Duplicates > 0 {
		fmt.Fprintf(w, ", %d already stored", rep.Duplicates)
	}
	fmt.Fprintln(w, ")")
	for _, kv := range []struct {
		name string
		m    map[string]int
	}{{"skipped", rep.Stats.Skipped}, {"unknown", rep.Stats.Unknown}, {"redacted", rep.Stats.Redacted}} {
		if len(kv.m) > 0 {
			fmt.Fprintf(w, "%s: %s\n", kv.name, countList(kv.m))
		}
	}
}

func countList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func newTranscriptShowOptions(c *ucli.Context, v *vault.Vault) (transcriptShowOptions, error) {
	ref, err := transcriptRef(c, v)
	if err != nil {
		return transcriptShowOptions{}, err
	}
	opts := transcriptShowOptions{ref: ref, from: c.Int("from"), to: c.Int("to"), json: c.Bool("json"),
		tail: !c.IsSet("from") && !c.IsSet("to")}
	if opts.from < 1 || opts.to < 0 || opts.to > 0 && opts.to < opts.from {
		return opts, usagef("transcript show: want 1 ≤ --from ≤ --to")
	}
	// A range the person chose is shown whole unless --limit says
	// otherwise: the terminal's default applies to the whole transcript.
	if opts.limit, err = legacyListLimit(c); err != nil {
		return opts, err
	}
	if !opts.tail && !c.IsSet("limit") {
		opts.limit = 0
	}
	return opts, nil
}

func runTranscriptShow(c *ucli.Context, v *vault.Vault) error {
	opts, err := newTranscriptShowOptions(c, v)
	if err != nil {
		return err
	}
	// Text streams out as it is read; the last N are kept in a ring as
	// the transcript goes by, so a long one costs N messages of memory;
	// the first N stop the read.
	stream := !opts.json && (opts.limit == 0 || !opts.tail)
	var msgs []vault.StoredMessage
	total := 0
	err = v.ReadTranscript(opts.ref, opts.from, opts.to, func(m vault.StoredMessage) error {
		total++
		switch {
		case opts.limit > 0 && !opts.tail && total > opts.limit:
			return errEnough
		case stream:
			printMessage(c.App.Writer, m)
		case opts.limit == 0 || len(msgs) < opts.limit:
			msgs = append(msgs, m)
		default:
			msgs[(total-1)%opts.limit] = m
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return err
	}
	if opts.tail && opts.limit > 0 && total > opts.limit {
		k := total % opts.limit
		msgs = append(msgs[k:], msgs[:k]...)
	}
	if errors.Is(err, errEnough) && !opts.json {
		fmt.Fprintf(c.App.ErrWriter, "memvault: note: showing %d messages from %d; --limit 0 shows all\n", opts.limit, opts.from)
	} else if opts.tail && opts.limit > 0 {
		limitNote(envOf(c), c.Bool("json"), len(msgs), total, "messages", "last")
	}
	if opts.json {
		if msgs == nil {
			msgs = []vault.StoredMessage{}
		}
		return printJSON(c.App.Writer, msgs)
	}
	for _, m := range msgs {
		printMessage(c.App.Writer, m)
	}
	return nil
}

// errEnough stops a read that has what it needs.
var errEnough = errors.New("enough")

// formatNames are the transcript formats import reads, by name.
func formatNames() []string {
	var out []string
	for _, f := range transcript.Formats() {
		out = append(out, string(f))
	}
	return out
}
