package cli

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gitrepo"
)

func ledgerCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "ledger",
		Usage: "list ledger events, oldest first",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "kind", Aliases: []string{"k"}, Usage: "only this kind (a supersede counts as the kind it replaces)"},
			&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, Usage: "only this thread"},
			&ucli.StringFlag{Name: "session", Usage: "only this session"},
			&ucli.StringFlag{Name: "since", Usage: "only events at or after DATE (2026-11-22, RFC 3339, or 7d / 12h ago)"},
			&ucli.BoolFlag{Name: "current", Usage: "only rows that still hold: no retracted or superseded rows, no corrections"},
			jsonFlag,
		},
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			f := vault.Filter{Kind: c.String("kind"), Session: c.String("session"), Current: c.Bool("current")}
			if t := c.String("thread"); t != "" {
				th, err := vault.ParseThread(t)
				if err != nil {
					return err
				}
				f.Thread = th.String()
			}
			if s := c.String("since"); s != "" {
				t, err := parseSince(s, time.Now())
				if err != nil {
					return err
				}
				f.Since = t
			}
			st, err := v.LoadState()
			if err != nil {
				return err
			}
			rows := st.Select(f)
			if c.Bool("json") {
				if rows == nil {
					rows = []*vault.Row{}
				}
				return printJSON(c.App.Writer, rows)
			}
			for _, r := range rows {
				printRow(c.App.Writer, r)
			}
			return nil
		}),
	}
}

func printRow(w io.Writer, r *vault.Row) {
	thread := r.Thread
	if thread == "" {
		thread = "-"
	}
	kind := r.Kind
	if ek := r.EffectiveKind(); ek != kind {
		kind += "(" + ek + ")"
	}
	text := strings.Join(strings.Fields(r.Text), " ")
	if len(r.Links) > 0 {
		text = strings.TrimSpace(text + " → " + strings.Join(r.Links, ","))
	}
	var marks []string
	if r.RetractedBy != "" {
		marks = append(marks, "retracted by "+r.RetractedBy)
	}
	if r.SupersededBy != "" {
		marks = append(marks, "superseded by "+r.SupersededBy)
	}
	if r.ClosedBy != "" {
		marks = append(marks, "closed by "+r.ClosedBy)
	}
	if len(marks) > 0 {
		text += "  [" + strings.Join(marks, "; ") + "]"
	}
	fmt.Fprintf(w, "%s  %s  %-16s %-20s %s\n", r.TS, r.ID, kind, thread, text)
}

// parseSince accepts a date, an RFC 3339 time, or an age such as 7d or 12h.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days >= 0 {
			return now.AddDate(0, 0, -days), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usagef("since %q: want a date (2026-11-22), an RFC 3339 time, or an age (7d, 12h)", s)
}

func verifyCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "verify",
		Usage: "check every hash, every prev link and every reference in the ledger",
		Flags: []ucli.Flag{jsonFlag},
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			rep, err := v.Verify()
			if err != nil {
				return err
			}
			w := c.App.Writer
			if c.Bool("json") {
				if rep.Problems == nil {
					rep.Problems = []vault.Problem{}
				}
				if err := printJSON(w, rep); err != nil {
					return err
				}
			} else {
				for _, p := range rep.Problems {
					fmt.Fprintf(c.App.ErrWriter, "%s\n", p)
				}
				for _, p := range rep.Torn {
					fmt.Fprintf(c.App.ErrWriter, "note: %s\n", p)
				}
				if rep.OK {
					fmt.Fprintf(w, "ok: %d events in %d segments, chain intact\n", rep.Events, rep.Segments)
				} else {
					fmt.Fprintf(w, "FAILED: %d problems in %d events\n", len(rep.Problems), rep.Events)
				}
			}
			if !rep.OK {
				return &silentError{code: ExitCorrupt}
			}
			return nil
		}),
	}
}

func logCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "log",
		Usage: "show the vault's lineage of commits, newest first",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, Usage: "only commits that touch this thread"},
			&ucli.IntFlag{Name: "limit", Aliases: []string{"n"}, Value: 20, Usage: "at most N commits (0: all)"},
			jsonFlag,
		},
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			limit := c.Int("limit")
			if limit < 0 {
				return usagef("log: --limit must be 0 or more")
			}
			thread := c.String("thread")
			if thread != "" {
				th, err := vault.ParseThread(thread)
				if err != nil {
					return err
				}
				thread = th.String()
			}
			commits := []gitrepo.CommitInfo{}
			err := v.Log(func(ci gitrepo.CommitInfo) bool {
				if thread != "" && !contains(ci.Trailers["Memvault-Thread"], thread) {
					return true
				}
				commits = append(commits, ci)
				return limit == 0 || len(commits) < limit
			})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, commits)
			}
			for _, ci := range commits {
				var who []string
				if a := ci.Trailers["Memvault-Agent"]; len(a) > 0 {
					who = append(who, "agent "+a[0])
				}
				if s := ci.Trailers["Memvault-Session"]; len(s) > 0 {
					who = append(who, "session "+s[0])
				}
				line := fmt.Sprintf("%s %s %s", vault.ShortHash(ci.Hash), ci.Time.Local().Format("2006-01-02 15:04"), ci.Subject)
				if len(who) > 0 {
					line += "  (" + strings.Join(who, ", ") + ")"
				}
				fmt.Fprintln(c.App.Writer, line)
			}
			return nil
		}),
	}
}

func sortStrings(s []string) { sort.Strings(s) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// statusReport is `memvault status --json`.
type statusReport struct {
	Vault       string         `json:"vault"`
	Agent       string         `json:"agent"`
	Head        string         `json:"head"`
	HeadSubject string         `json:"head_subject,omitempty"`
	Events      int            `json:"events"`
	Kinds       map[string]int `json:"kinds"`
	LastEvent   string         `json:"last_event,omitempty"`
	Threads     []string       `json:"threads"`
	Commitments []*vault.Row   `json:"open_commitments"`
	Lock        *vault.Lease   `json:"lock_holder,omitempty"`
	headStatus
}

func statusCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "status",
		Usage: "summarise the vault: head commit, events, open commitments, threads, lock",
		Flags: []ucli.Flag{jsonFlag},
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			agent, err := agentOf(c, v)
			if err != nil {
				return err
			}
			st, err := v.LoadState()
			if err != nil {
				return err
			}
			rep := statusReport{Vault: v.Root, Agent: agent, Kinds: st.KindCounts(),
				Events: len(st.Rows), Threads: st.Threads(), Commitments: st.OpenCommitments()}
			if rep.Threads == nil {
				rep.Threads = []string{}
			}
			if rep.Commitments == nil {
				rep.Commitments = []*vault.Row{}
			}
			if n := len(st.Rows); n > 0 {
				rep.LastEvent = st.Rows[n-1].TS
			}
			err = v.Log(func(ci gitrepo.CommitInfo) bool {
				rep.Head, rep.HeadSubject = ci.Hash, ci.Subject
				return false
			})
			if err != nil {
				return err
			}
			if l, held := vault.ReadLease(v.Root); held {
				rep.Lock = &l
			}
			rep.headStatus = newHeadStatus(v, st)
			if c.Bool("json") {
				return printJSON(c.App.Writer, rep)
			}
			w := c.App.Writer
			fmt.Fprintf(w, "vault:        %s\n", rep.Vault)
			fmt.Fprintf(w, "agent:        %s\n", rep.Agent)
			if rep.Head != "" {
				fmt.Fprintf(w, "head:         %s %s\n", vault.ShortHash(rep.Head), rep.HeadSubject)
			}
			fmt.Fprintf(w, "events:       %d", rep.Events)
			if rep.LastEvent != "" {
				fmt.Fprintf(w, ", last at %s", rep.LastEvent)
			}
			fmt.Fprintln(w)
			if len(rep.Kinds) > 0 {
				kinds := make([]string, 0, len(rep.Kinds))
				for k, n := range rep.Kinds {
					kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
				}
				sort.Strings(kinds)
				fmt.Fprintf(w, "kinds:        %s\n", strings.Join(kinds, ", "))
			}
			fmt.Fprintf(w, "threads:      %d\n", len(rep.Threads))
			for _, t := range rep.Threads {
				fmt.Fprintf(w, "  %s\n", t)
			}
			fmt.Fprintf(w, "commitments:  %d open\n", len(rep.Commitments))
			for _, r := range rep.Commitments {
				fmt.Fprintf(w, "  %s  %s\n", r.ID, strings.Join(strings.Fields(r.Text), " "))
			}
			rep.headStatus.print(w)
			if rep.Lock != nil {
				fmt.Fprintf(w, "lock:         held by %s\n", rep.Lock)
			} else {
				fmt.Fprintf(w, "lock:         free\n")
			}
			return nil
		}),
	}
}
