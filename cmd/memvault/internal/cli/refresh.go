package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/memvault/memvault/vault/continuity"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"

	ucli "github.com/urfave/cli/v2"
)

type refreshOptions struct {
	writeOptions
	on string // the event: session-end or compaction
}

func newRefreshCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "refresh",
		Usage: "what hooks call: refresh MEMORY.md and the thread heads that changed, and retry deferred refreshes",
		Description: "--on session-end|compaction names the event. MEMORY.md is always refreshed; thread heads\n" +
			"are refreshed when their rows changed since their last render (with --session, only the\n" +
			"threads that session wrote to). A head whose lease is held by someone else is deferred:\n" +
			"recorded as head.deferred and retried by the next refresh of any session.",
	}
}

func (o *refreshOptions) flags() []ucli.Flag {
	return o.writeFlags(&ucli.StringFlag{Name: "on", Usage: "the event (required)", Destination: &o.on})
}

// runRefresh manages its own writes: heads.Refresh takes each head's lease
// and the vault lock itself, and records deferred heads for a later retry.
func runRefresh(_ context.Context, opts refreshOptions, e env) error {
	v, err := e.openVault()
	if err != nil {
		return err
	}
	if opts.on == "" {
		return usagef("refresh: --on is required: %s", oneOf(vault.RefreshEvents))
	}
	if err := checkChoice("refresh", "on", opts.on, vault.RefreshEvents); err != nil {
		return err
	}
	txOpts, err := e.txOptions(v, opts.writeOptions)
	if err != nil {
		return err
	}
	rep, err := heads.Refresh(v, heads.RefreshOptions{TxOptions: txOpts, Trigger: opts.on, Memory: true, Affected: true, Protocol: continuity.RefreshHead})
	if err != nil {
		return err
	}
	return printRefresh(e, opts.json, rep, false)
}

// printRefresh reports a refresh, head by head (refresh, render).
func printRefresh(e env, json bool, rep *heads.RefreshReport, explain bool) error {
	for _, w := range rep.Warnings {
		fmt.Fprintf(e.stderr, "memvault: warning: %s\n", w)
	}
	if json {
		return printJSON(e.stdout, rep)
	}
	w := e.stdout
	for _, h := range rep.Heads {
		line := h.Head + ": " + h.Status
		switch {
		case h.Status == "deferred":
			line += ": lease held by " + h.Holder.String() + "; the next refresh retries it"
		case h.Status == "conflict":
			line += " in " + strings.Join(h.Sections, "; ") + ": your text was kept, the render's other rows merged beside it; see memvault status, settle with memvault resolve"
		}
		if h.HandEdits {
			line += " (your uncommitted edit was committed first)"
		}
		if len(h.Retried) > 0 {
			line += fmt.Sprintf(" (retried %d deferred)", len(h.Retried))
		}
		if h.Takeover != nil {
			line += " (took over a lease: " + h.Takeover.Reason + ")"
		}
		fmt.Fprintln(w, line)
	}
	if rep.Commit != "" {
		fmt.Fprintf(w, "commit %s\n", vault.ShortHash(rep.Commit))
	}
	if explain {
		for _, h := range rep.Heads {
			if h.Report != nil {
				printExplain(w, h.Report)
			}
		}
	}
	return nil
}
