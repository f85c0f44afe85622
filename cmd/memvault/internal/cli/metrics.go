package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
)

type metricsOptions struct{ jsonOnly }

func newMetricsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "metrics",
		Usage: "count what the ledger holds: commitments and their ages, events per kind and source, violations, rejected claims, sessions, head freshness",
		Description: "Computed from the ledger alone, so the same ledger always gives the same numbers:\n" +
			"ages are measured to the ledger's newest event, not to the clock, and a head is fresh\n" +
			"or stale by the head.rendered events the ledger records, not by the files on disk.",
	}
}

func runMetrics(_ context.Context, opts metricsOptions, e env, v *vault.Vault) error {
	st, err := v.LoadState()
	if err != nil {
		return err
	}
	m := ops.ComputeMetrics(st, v.Config.Agent)
	if opts.json {
		return printJSON(e.stdout, m)
	}
	printMetrics(e.stdout, m)
	return nil
}

// printMetrics writes the metrics for people; --json prints ops.Metrics.
func printMetrics(w io.Writer, m *ops.Metrics) {
	fmt.Fprintf(w, "events:       %d", m.Events)
	if m.AsOf != "" {
		fmt.Fprintf(w, ", %s to %s", m.First, m.AsOf)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "kinds:        %s\n", counts(m.Kinds))
	fmt.Fprintf(w, "sources:      %s\n", counts(m.Sources))
	fmt.Fprintf(w, "agents:       %s\n", counts(m.Agents))
	cm := m.Commitments
	fmt.Fprintf(w, "commitments:  %d open, %d closed, %d withdrawn", cm.Open, cm.Closed, cm.Withdrawn)
	if cm.Open > 0 {
		fmt.Fprintf(w, "; oldest open %s, mean open %s", age(cm.OldestOpenSeconds), age(cm.MeanOpenSeconds))
	}
	if cm.Closed > 0 {
		fmt.Fprintf(w, "; mean time to close %s", age(cm.MeanClosedSeconds))
	}
	fmt.Fprintln(w)
	for _, o := range cm.OpenAges {
		fmt.Fprintf(w, "  %s  %-8s %-20s %s\n", o.ID, age(o.AgeSeconds), orDashCLI(o.Thread), ops.Clip(ops.OneLine(o.Text), ops.ReplayTextWidth))
	}
	fmt.Fprintf(w, "violations:   %d", m.Violations.Total)
	if m.Violations.Total > 0 {
		fmt.Fprintf(w, "; by kind: %s; by source: %s", counts(m.Violations.ByKind), counts(m.Violations.BySource))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "claims:       %d, %d rejected", m.Claims.Total, m.Claims.Rejected)
	if m.Claims.Rejected > 0 {
		fmt.Fprintf(w, " (%s)", counts(m.Claims.Reasons))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "sessions:     %d distinct, %d started, %d summarized\n", m.Sessions.Distinct, m.Sessions.Started, m.Sessions.Summarized)
	printContextMetrics(w, m.Context)
	fmt.Fprintf(w, "threads:      %d\n", m.Threads)
	fmt.Fprintf(w, "corrections:  %d retracted, %d superseded\n", m.Retracted, m.Superseded)
	fmt.Fprintln(w, "heads:")
	for _, h := range m.Heads {
		state := h.State
		if h.LastRendered != "" {
			state += " (rendered " + h.LastRendered + ")"
		}
		fmt.Fprintf(w, "  %-32s %s\n", ops.OneLine(h.Head), state)
	}
}

// counts lists a count per name, the largest first, then by name; "none"
// when there is nothing. Names are escaped onto one line.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if m[names[i]] != m[names[j]] {
			return m[names[i]] > m[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %d", ops.Clip(ops.OneLine(k), 60), m[k])
	}
	return strings.Join(parts, ", ")
}

// age writes seconds as the two largest units: 3d4h, 2h5m, 7m30s, 12s.
func age(s int64) string {
	d := time.Duration(s) * time.Second
	days := int64(d / (24 * time.Hour))
	d -= time.Duration(days) * 24 * time.Hour
	h, mnt, sec := int64(d/time.Hour), int64(d%time.Hour/time.Minute), int64(d%time.Minute/time.Second)
	switch {
	case days > 0:
		return fmt.Sprintf("%dd%dh", days, h)
	case h > 0:
		return fmt.Sprintf("%dh%dm", h, mnt)
	case mnt > 0:
		return fmt.Sprintf("%dm%ds", mnt, sec)
	}
	return fmt.Sprintf("%ds", sec)
}

func orDashCLI(s string) string {
	if s == "" {
		return "-"
	}
	return ops.OneLine(s)
}

// printContextMetrics writes the start contexts' retention and efficiency:
// the totals, then one line per session start.
func printContextMetrics(w io.Writer, c ops.ContextMetrics) {
	fmt.Fprintf(w, "context:      retention %s, token efficiency %s over %d measured start(s), %d unknown\n",
		figure(c.Retention), figure(c.Efficiency), c.Measured, c.Unknown)
	for _, s := range c.Sessions {
		if !s.Known {
			fmt.Fprintf(w, "  %-24s %-20s unknown (%s)\n", ops.Clip(ops.OneLine(s.Session), 24), orDashCLI(s.Thread), s.Note)
			continue
		}
		unsized := ""
		if s.UnsizedNodes > 0 {
			unsized = fmt.Sprintf("; %d node(s) without their transcript's size left out", s.UnsizedNodes)
		}
		fmt.Fprintf(w, "  %-24s %-20s retention %s (%d of %d rows), efficiency %s (%d tokens of rows + %d of %d transcript(s) for %d injected%s)\n",
			ops.Clip(ops.OneLine(s.Session), 24), orDashCLI(s.Thread), figure(s.Retention), s.Carried, s.Held,
			figure(s.Efficiency), s.HeldTokens, s.TranscriptTokens, s.Transcripts, s.InjectedTokens, unsized)
	}
}

// figure is a ratio, or "unknown" when it has none.
func figure(f *float64) string {
	if f == nil {
		return "unknown"
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}
