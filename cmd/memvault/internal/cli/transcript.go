package cli

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/hooks/transcript"
	"github.com/memvault/memvault/vault"
)

var (
	requiredSession   = &ucli.StringFlag{Name: "session", EnvVars: []string{"MEMVAULT_SESSION"}, Usage: "session key (required)"}
	sessionThreadFlag = &ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, EnvVars: []string{"MEMVAULT_THREAD"},
		Usage: "thread the session belongs to (recorded once, scopes recall)"}
)

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

func transcriptCommand() *ucli.Command {
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
				Action: transcriptAppend,
			},
			{
				Name:      "import",
				Usage:     "import a harness transcript file; only what is new is added",
				ArgsUsage: "FILE",
				Flags: []ucli.Flag{requiredSession, harnessFlag, jsonFlag, sessionThreadFlag,
					&ucli.StringFlag{Name: "format", Usage: "claude-code, codex, openclaw, gemini or generic (required)"},
				},
				Action: transcriptImport,
			},
			{
				Name:  "show",
				Usage: "print a session's messages",
				Flags: []ucli.Flag{requiredSession, jsonFlag,
					&ucli.IntFlag{Name: "from", Value: 1, Usage: "first message number"},
					&ucli.IntFlag{Name: "to", Usage: "last message number (default: the end)"},
				},
				Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
					t, err := transcriptRef(c, v)
					if err != nil {
						return err
					}
					from, to := c.Int("from"), c.Int("to")
					if from < 1 || to < 0 || to > 0 && to < from {
						return usagef("transcript show: want 1 ≤ --from ≤ --to")
					}
					var msgs []vault.StoredMessage
					err = v.ReadTranscript(t, from, to, func(m vault.StoredMessage) error {
						if c.Bool("json") {
							msgs = append(msgs, m)
							return nil
						}
						printMessage(c.App.Writer, m)
						return nil
					})
					if err != nil || !c.Bool("json") {
						return err
					}
					if msgs == nil {
						msgs = []vault.StoredMessage{}
					}
					return printJSON(c.App.Writer, msgs)
				}),
			},
		},
	}
}

func transcriptAppend(c *ucli.Context) error {
	v, err := openVault(c)
	if err != nil {
		return err
	}
	t, err := transcriptRef(c, v)
	if err != nil {
		return err
	}
	var msgs []transcript.Message
	if c.NArg() > 0 {
		role := transcript.Role(c.String("role"))
		if role == "" {
			return usagef("transcript append: --role is required with TEXT")
		}
		text, err := textArg(c, "text")
		if err != nil {
			return err
		}
		msgs = []transcript.Message{{Role: role, Speaker: c.String("speaker"), Text: text}}
	} else {
		data, err := io.ReadAll(c.App.Reader)
		if err != nil {
			return fmt.Errorf("transcript append: read stdin: %w", err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return usagef("transcript append: no TEXT and nothing on stdin")
		}
		if !bytes.HasSuffix(data, []byte("\n")) {
			data = append(data, '\n')
		}
		res, err := transcript.ParseBytes(transcript.Generic, data, transcript.Cursor{}, transcript.Options{NoRedact: true})
		if err != nil {
			return err
		}
		if res.Stats.Invalid > 0 || len(res.Stats.Unknown) > 0 {
			return usagef("transcript append: stdin: want one generic JSON message per line ({\"role\",\"text\",…}); %d lines were not", res.Stats.Invalid+len(res.Stats.Unknown))
		}
		msgs = res.Messages
	}
	agent, _ := agentOf(c, v)
	var from, to int
	_, err = v.Update(vault.TxOptions{Command: "transcript append", Agent: agent, Session: t.Session, Harness: c.String("harness")},
		func(tx *vault.Tx) error {
			var err error
			if from, to, err = tx.AppendText(t, msgs); err != nil {
				return err
			}
			if th := c.String("thread"); th != "" {
				return tx.BindSession(t, th)
			}
			return nil
		})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"agent": t.Agent, "session": t.Session, "from": from, "to": to})
	}
	fmt.Fprintf(c.App.Writer, "%s: messages %d-%d\n", t.Path(), from, to)
	return nil
}

func transcriptImport(c *ucli.Context) error {
	v, err := openVault(c)
	if err != nil {
		return err
	}
	t, err := transcriptRef(c, v)
	if err != nil {
		return err
	}
	if c.NArg() != 1 {
		return usagef("transcript import: want exactly one FILE")
	}
	if c.String("format") == "" {
		return usagef("transcript import: --format is required (claude-code, codex, openclaw, gemini or generic)")
	}
	format, err := transcript.ParseFormat(c.String("format"))
	if err != nil {
		return usagef("%v", err)
	}
	rep, err := v.Import(vault.TxOptions{Agent: t.Agent, Harness: c.String("harness")}, t, format, c.Args().First(), c.String("thread"))
	if err != nil {
		return err
	}
	if rep.Added > 0 {
		// Best effort: recall finds the text either way, from the files.
		_, _ = v.CatchUpIndex(0)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	w := c.App.Writer
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
	return nil
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

func sessionsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "sessions",
		Usage: "list stored transcripts, by agent and session",
		Flags: []ucli.Flag{jsonFlag},
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			list, err := v.Sessions()
			if err != nil {
				return err
			}
			if c.Bool("json") {
				if list == nil {
					list = []vault.SessionInfo{}
				}
				return printJSON(c.App.Writer, list)
			}
			for _, s := range list {
				fmt.Fprintf(c.App.Writer, "%-16s %-40s %6d messages  %d parts  %s\n", s.Agent, s.Session, s.Messages, s.Parts, s.Path)
			}
			return nil
		}),
	}
}
