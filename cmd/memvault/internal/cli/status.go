package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/units"
)

type statusOptions struct{ jsonOnly }

func newStatusCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "status",
		Usage: "summarise the vault: health, head commit, events, open commitments, threads, lock",
	}
}

func runStatus(_ context.Context, opts statusOptions, e env, v *vault.Vault) error {
	agent, err := e.agentOf(v)
	if err != nil {
		return err
	}
	rep, err := ops.NewStatus(v, agent)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, rep)
	}
	printStatus(e.stdout, rep)
	return nil
}

// printStatus writes the status for people; --json prints ops.Status.
func printStatus(w io.Writer, rep *ops.Status) {
	// First, so that nobody reads the rest without seeing it.
	fmt.Fprintf(w, "health:       %s\n", rep.Health.Line())
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
	printHeadStatus(w, rep.HeadStatus)
	if rep.Lock != nil {
		fmt.Fprintf(w, "lock:         held by %s\n", rep.Lock)
	} else {
		fmt.Fprintf(w, "lock:         free\n")
	}
	fmt.Fprintf(w, "jobs:         %s\n", jobsLine(rep.Jobs, time.Now()))
	g := rep.GitObjects
	fmt.Fprintf(w, "git objects:  ~%s loose (~%s on disk)", units.Count(int64(g.Objects)), units.Bytes(g.DiskBytes))
	switch {
	case g.GCAdvised:
		fmt.Fprintf(w, ", past %s: run memvault gc\n", units.Count(int64(g.Threshold)))
	case g.AutoPack:
		fmt.Fprintf(w, ", packed by the next write past %s\n", units.Count(int64(g.Threshold)))
	default:
		fmt.Fprintf(w, ", gc advised past %s\n", units.Count(int64(g.Threshold)))
	}
}

func printHeadStatus(w io.Writer, hs ops.HeadStatus) {
	if len(hs.Stale) > 0 {
		fmt.Fprintf(w, "stale heads:  %d behind their rows (memvault refresh renders them)\n", len(hs.Stale))
		for _, h := range hs.Stale {
			fmt.Fprintf(w, "  %s\n", h)
		}
	}
	fmt.Fprintf(w, "deferred:     %d head refreshes waiting for a retry\n", len(hs.Deferred))
	for _, d := range hs.Deferred {
		fmt.Fprintf(w, "  %s  %s  %s\n", d.ID, d.TS, d.Text)
	}
	fmt.Fprintf(w, "conflicts:    %d unresolved in heads\n", len(hs.Conflicts))
	for _, c := range hs.Conflicts {
		fmt.Fprintf(w, "  %s  %s  (memvault resolve %s)\n", c.ID, c.Text, c.Head)
	}
	for _, l := range hs.Leases {
		fmt.Fprintf(w, "head lease:   %s held by %s\n", l.Head, l.String())
	}
}

// healthReport is the vault's health as status and doctor report it
// (ops.Health), with the class doctor fails with, which doctor may raise.
type healthReport struct {
	ops.Health
	class error
}

func newHealthReport(v *vault.Vault) healthReport {
	h := ops.NewHealth(v)
	return healthReport{Health: h, class: h.Class}
}
