package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/scope"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/recall"
	"github.com/memvault/memvault/vault/transcript"

	ucli "github.com/urfave/cli/v2"
)

// newRequiredSessionFlag is the --session a command cannot do without.
func newRequiredSessionFlag(p *string) *ucli.StringFlag {
	return &ucli.StringFlag{Name: "session", EnvVars: []string{"MEMVAULT_SESSION"}, Usage: "session key (required)", Destination: p}
}

// newSessionThreadFlag is the thread a transcript's session belongs to.
func newSessionThreadFlag(p *string) *ucli.StringFlag {
	return &ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, EnvVars: []string{"MEMVAULT_THREAD"},
		Usage: "thread the session belongs to (recorded once, scopes recall)", Destination: p}
}

type transcriptAppendOptions struct {
	writeOptions         // the session (required), the harness, --json
	thread        string // bound to the session when set
	role, speaker string
	text          []string // the words of one message; none: JSON messages on stdin
}

type transcriptImportOptions struct {
	writeOptions        // the session (required), the harness, --json
	thread       string // bound to the session when set
	format       string
	args         []string // FILE
}

type transcriptShowOptions struct {
	session        string
	json           bool
	from, to       int
	fromSet, toSet bool // --from, --to given: a range, not the last messages
	limitOptions        // at most this many messages; 0 for all
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
			},
			{
				Name:      "import",
				Usage:     "import a harness transcript file; only what is new is added",
				ArgsUsage: "FILE",
			},
			{
				Name:  "show",
				Usage: "print a session's messages",
			},
		},
	}
}

func (o *transcriptAppendOptions) flags() []ucli.Flag {
	return []ucli.Flag{newRequiredSessionFlag(&o.session), newHarnessFlag(&o.harness), newJSONFlag(&o.json), newSessionThreadFlag(&o.thread),
		&ucli.StringFlag{Name: "role", Usage: "user, assistant, tool or system (with TEXT)", Destination: &o.role},
		&ucli.StringFlag{Name: "speaker", Usage: "who spoke within the role (default: the role)", Destination: &o.speaker},
	}
}

func (o *transcriptAppendOptions) setArgs(args []string) { o.text = args }

func (o *transcriptImportOptions) flags() []ucli.Flag {
	return []ucli.Flag{newRequiredSessionFlag(&o.session), newHarnessFlag(&o.harness), newJSONFlag(&o.json), newSessionThreadFlag(&o.thread),
		&ucli.StringFlag{Name: "format", Usage: "the file's format (required)", Destination: &o.format},
	}
}

func (o *transcriptImportOptions) setArgs(args []string) { o.args = args }

func (o *transcriptShowOptions) flags() []ucli.Flag {
	return []ucli.Flag{newRequiredSessionFlag(&o.session), newJSONFlag(&o.json),
		&ucli.IntFlag{Name: "from", Value: 1, Usage: "first message number", Destination: &o.from, Action: markSet[int](&o.fromSet)},
		&ucli.IntFlag{Name: "to", Usage: "last message number (default: the end)", Destination: &o.to, Action: markSet[int](&o.toSet)},
		o.limitFlag("messages: the last ones, or the first from --from", 0),
	}
}

// transcriptRef resolves the agent and the session.
func transcriptRef(e env, v *vault.Vault, session string) (transcript.Ref, error) {
	agent, err := e.agentOf(v)
	if err != nil {
		return transcript.Ref{}, err
	}
	if session == "" {
		return transcript.Ref{}, usagef("transcript %s: --session is required", e.name)
	}
	return transcript.Ref{Agent: agent, Session: session}, nil
}

// runTranscriptAppend reads the messages before the lock is taken (stdin
// may be slow), then appends them in one transaction.
func runTranscriptAppend(_ context.Context, opts transcriptAppendOptions, e env, v *vault.Vault) (txWork, error) {
	ref, err := transcriptRef(e, v, opts.session)
	if err != nil {
		return txWork{}, err
	}
	msgs, err := opts.messages(e)
	if err != nil {
		return txWork{}, err
	}
	var from, to int
	apply := func(tx *vault.Tx) error {
		var err error
		if from, to, err = tx.AppendText(ref, msgs); err != nil {
			return err
		}
		if opts.thread != "" {
			return scope.BindSession(tx, ref, opts.thread)
		}
		return nil
	}
	report := func(*vault.Result) error {
		if opts.json {
			return printJSON(e.stdout, map[string]any{"agent": ref.Agent, "session": ref.Session, "from": from, "to": to})
		}
		fmt.Fprintf(e.stdout, "%s: messages %d-%d\n", ref.Path(), from, to)
		return nil
	}
	return txWork{apply: apply, report: report}, nil
}

// messages are the messages to append: TEXT as one message of --role, or
// the JSON messages on stdin.
func (o transcriptAppendOptions) messages(e env) ([]transcript.Message, error) {
	if len(o.text) > 0 {
		role := transcript.Role(o.role)
		if role == "" {
			return nil, usagef("transcript append: --role is required with TEXT")
		}
		text, err := e.textArg(o.text, "text")
		if err != nil {
			return nil, err
		}
		return []transcript.Message{{Role: role, Speaker: o.speaker, Text: text}}, nil
	}
	return stdinMessages(e.stdin)
}

// maxAppendInput bounds the JSON messages transcript append reads from
// stdin: a stream without end is refused once past it.
const maxAppendInput = 64 << 20

// stdinMessages reads generic JSON messages, one per line.
func stdinMessages(r io.Reader) ([]transcript.Message, error) {
	data, err := fileio.ReadBounded(r, "transcript append: stdin", maxAppendInput)
	if err != nil {
		return nil, err
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

// fileFormat checks the import's FILE and --format.
func (o transcriptImportOptions) fileFormat() (string, transcript.Format, error) {
	if len(o.args) != 1 {
		return "", "", usagef("transcript import: want exactly one FILE")
	}
	if o.format == "" {
		return "", "", usagef("transcript import: --format is required: %s", oneOf(formatNames()))
	}
	if err := checkChoice("transcript import", "format", o.format, formatNames()); err != nil {
		return "", "", err
	}
	format, err := transcript.ParseFormat(o.format)
	if err != nil {
		return "", "", usagef("%v", err)
	}
	return o.args[0], format, nil
}

// runTranscriptImport manages its own writes: lineage.Import takes the lock
// and commits what is new, then the index catches up.
func runTranscriptImport(_ context.Context, opts transcriptImportOptions, e env) error {
	v, err := e.openVault()
	if err != nil {
		return err
	}
	ref, err := transcriptRef(e, v, opts.session)
	if err != nil {
		return err
	}
	file, format, err := opts.fileFormat()
	if err != nil {
		return err
	}
	stop := startProgress(e, v, opts.json)
	defer stop()
	rep, err := lineage.Import(v, vault.TxOptions{Agent: ref.Agent, Harness: opts.harness}, ref, format, file, opts.thread)
	if err != nil {
		return err
	}
	if rep.Added > 0 {
		// Best effort: recall finds the text either way, from the files.
		_, _ = recall.CatchUpIndex(v, 0)
	}
	stop()
	gcAdvice(e, v)
	if opts.json {
		return printJSON(e.stdout, rep)
	}
	printImport(e.stdout, ref, rep)
	return nil
}

func printImport(w io.Writer, t transcript.Ref, rep *lineage.ImportReport) {
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

// window is the messages the options ask for: the range, the limit, and
// whether it is the last limit messages (no --from or --to).
func (o transcriptShowOptions) window(e env) (limit int, tail bool, err error) {
	tail = !o.fromSet && !o.toSet
	if o.from < 1 || o.to < 0 || o.to > 0 && o.to < o.from {
		return 0, tail, usagef("transcript show: want 1 ≤ --from ≤ --to")
	}
	// A range the person chose is shown whole unless --limit says
	// otherwise: the terminal's default applies to the whole transcript.
	if limit, err = o.listLimit(e, o.json); err != nil {
		return 0, tail, err
	}
	if !tail && !o.limitSet {
		limit = 0
	}
	return limit, tail, nil
}

func runTranscriptShow(_ context.Context, opts transcriptShowOptions, e env, v *vault.Vault) error {
	ref, err := transcriptRef(e, v, opts.session)
	if err != nil {
		return err
	}
	limit, tail, err := opts.window(e)
	if err != nil {
		return err
	}
	// Text streams out as it is read; the last N are kept in a ring as
	// the transcript goes by, so a long one costs N messages of memory;
	// the first N stop the read.
	stream := !opts.json && (limit == 0 || !tail)
	var msgs []transcript.Stored
	total := 0
	err = transcript.Read(v.Files(), ref, opts.from, opts.to, func(m transcript.Stored) error {
		total++
		switch {
		case limit > 0 && !tail && total > limit:
			return errEnough
		case stream:
			printMessage(e.stdout, m)
		case limit == 0 || len(msgs) < limit:
			msgs = append(msgs, m)
		default:
			msgs[(total-1)%limit] = m
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return err
	}
	if tail && limit > 0 && total > limit {
		k := total % limit
		msgs = append(msgs[k:], msgs[:k]...)
	}
	if errors.Is(err, errEnough) && !opts.json {
		fmt.Fprintf(e.stderr, "memvault: note: showing %d messages from %d; --limit 0 shows all\n", limit, opts.from)
	} else if tail && limit > 0 {
		limitNote(e, opts.json, len(msgs), total, "messages", "last")
	}
	if opts.json {
		if msgs == nil {
			msgs = []transcript.Stored{}
		}
		return printJSON(e.stdout, msgs)
	}
	for _, m := range msgs {
		printMessage(e.stdout, m)
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
