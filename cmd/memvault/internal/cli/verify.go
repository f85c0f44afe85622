package cli

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/lineage"
)

type verifyOptions struct {
	json        bool
	staged      bool // the segments staged for the next commit (the pre-commit hook)
	incremental bool // only what changed since the last clean check
}

func newVerifyCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "verify",
		Usage: "check every hash, every prev link and every reference in the ledger, and that it keeps every committed event",
	}
}

func (o *verifyOptions) flags() []ucli.Flag {
	return []ucli.Flag{newJSONFlag(&o.json),
		&ucli.BoolFlag{Name: "staged", Usage: "check the ledger as staged for the next git commit (the vault's pre-commit hook)", Destination: &o.staged},
		&ucli.BoolFlag{Name: "incremental", Usage: "check only the segments changed since the last clean check, as writers do (references and nodes are not checked)", Destination: &o.incremental},
	}
}

// runVerify prints every problem, then fails with ExitCorrupt on its own
// (silentError): the report is the message.
func runVerify(_ context.Context, opts verifyOptions, e env, v *vault.Vault) error {
	if opts.staged && opts.incremental {
		return usagef("verify: --staged and --incremental do not go together")
	}
	verify := v.Verify
	switch {
	case opts.staged:
		verify = v.VerifyStaged
	case opts.incremental:
		verify = v.VerifyIncremental
	default:
		// A full verification reads the whole ledger at a steady pace:
		// the collector's usual pace keeps its memory near what it holds
		// (the ids and hashes of the events, and a few segments).
		defer debug.SetGCPercent(debug.SetGCPercent(100))
	}
	stop := startProgress(e, v, opts.json)
	defer stop()
	rep, err := verify()
	if err == nil && rep.OK && !opts.staged && !opts.incremental {
		err = checkClaims(v, rep)
	}
	stop()
	if err != nil {
		return err
	}
	w := e.stdout
	if opts.json {
		if rep.Problems == nil {
			rep.Problems = []vault.Problem{}
		}
		if err := printJSON(w, rep); err != nil {
			return err
		}
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintf(e.stderr, "%s\n", p)
		}
		for _, p := range rep.Torn {
			fmt.Fprintf(e.stderr, "note: %s\n", p)
		}
		for _, n := range rep.Notes {
			fmt.Fprintf(e.stderr, "note: %s\n", n)
		}
		if len(rep.Tips) > 1 && rep.OK {
			fmt.Fprintf(e.stderr, "note: %d lines of history from a merge end in separate tips; the next write joins them\n", len(rep.Tips))
		}
		switch {
		case rep.OK && rep.Incremental:
			fmt.Fprintf(w, "ok: %d segments, %d read again since the last clean check, chain intact (incremental: memvault verify checks everything)\n", rep.Segments, rep.Rechecked)
		case rep.OK:
			fmt.Fprintf(w, "ok: %d events in %d segments, chain intact\n", rep.Events, rep.Segments)
		case rep.Incremental:
			fmt.Fprintf(w, "FAILED: %d problems in %d segments\n", len(rep.Problems), rep.Segments)
		default:
			fmt.Fprintf(w, "FAILED: %d problems in %d events\n", len(rep.Problems), rep.Events)
		}
		if !rep.OK {
			links, forged := 0, 0
			for _, p := range rep.Problems {
				if p.IsLink() {
					links++
				}
				if p.Commit != "" {
					forged++
				}
			}
			if links > 0 {
				fmt.Fprintf(e.stderr, "hint: replace each link with the file or folder it points to, or git rm it; memvault never follows links inside the vault\n")
			}
			if forged > 0 {
				fmt.Fprintf(e.stderr, "hint: undo a forged commit with git revert, and take a forged line out of the work tree; memvault repair does not take a forgery as its own\n")
			}
			if claims := countClaimProblems(rep.Problems); claims > 0 {
				fmt.Fprintf(e.stderr, "hint: a claim no check wrote is withdrawn with memvault retract ID; memvault repair does not judge claims\n")
				forged += claims
			}
			if links+forged < len(rep.Problems) {
				fmt.Fprintf(e.stderr, "hint: memvault repair re-chains the ledger and restores committed events, keeping the old segments under .logs/\n")
			}
		}
	}
	if !rep.OK {
		return &silentError{code: ExitCorrupt}
	}
	return nil
}

// checkClaims adds to rep the claims whose status no check wrote
// (lineage.CheckClaims): a full verification judges every claim, since the
// engine's checks hold lines to the chain and the policy but cannot judge a
// claim. It runs on a ledger that passed those checks: on a broken one its
// replay would read what the chain check already names.
func checkClaims(v *vault.Vault, rep *vault.VerifyReport) error {
	claims, err := lineage.CheckClaims(v)
	if err != nil {
		return err
	}
	rep.Problems = append(rep.Problems, claims...)
	rep.OK = rep.OK && len(claims) == 0
	return nil
}

// countClaimProblems counts the problems of checkClaims in ps.
func countClaimProblems(ps []vault.Problem) int {
	n := 0
	for _, p := range ps {
		if strings.HasPrefix(p.Msg, lineage.ForgedClaim) {
			n++
		}
	}
	return n
}
