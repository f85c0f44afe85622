package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memvault/memvault/vault/heads"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gitrepo"
)

type statusOptions struct {
	agent string
	json  bool
}

// statusReport is `memvault status --json`.
type statusReport struct {
	Health      healthReport   `json:"health"`
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
	// GitObjects estimates the loose git objects and says whether a gc
	// is advised (vault.EstimateLoose).
	GitObjects vault.LooseObjects `json:"git_objects"`
	headStatus
}

// headStatus is the heads' part of `memvault status`: refreshes waiting
// for a retry, conflicts waiting for a person, and leases held now.
type headStatus struct {
	Deferred  []heads.HeadEvent `json:"deferred_refreshes"`
	Conflicts []heads.HeadEvent `json:"head_conflicts"`
	Leases    []heads.HeadLease `json:"head_leases"`
}

func newStatusCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "status",
		Usage: "summarise the vault: health, head commit, events, open commitments, threads, lock",
		Flags: []ucli.Flag{jsonFlag},
	}
}

func runStatus(c *ucli.Context, v *vault.Vault) error {
	agent, err := agentOf(c, v)
	if err != nil {
		return err
	}
	opts := statusOptions{agent: agent, json: c.Bool("json")}
	rep, err := newStatusReport(v, opts.agent)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(c.App.Writer, rep)
	}
	rep.print(c.App.Writer)
	return nil
}

func newStatusReport(v *vault.Vault, agent string) (*statusReport, error) {
	st, err := v.LoadState()
	if err != nil {
		return nil, err
	}
	rep := &statusReport{Health: newHealthReport(v), Vault: v.Root, Agent: agent, Kinds: st.KindCounts(),
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
		return nil, err
	}
	if l, held := vault.ReadLease(v.Root); held {
		rep.Lock = &l
	}
	rep.headStatus = newHeadStatus(v, st)
	rep.GitObjects = v.EstimateLoose()
	return rep, nil
}

func (rep *statusReport) print(w io.Writer) {
	// First, so that nobody reads the rest without seeing it.
	fmt.Fprintf(w, "health:       %s\n", rep.Health.line())
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
	g := rep.GitObjects
	fmt.Fprintf(w, "git objects:  ~%s loose (~%s on disk)", vault.FormatCount(int64(g.Objects)), vault.FormatBytes(g.DiskBytes))
	switch {
	case g.GCAdvised:
		fmt.Fprintf(w, ", past %s: run memvault gc\n", vault.FormatCount(int64(g.Threshold)))
	case g.AutoPack:
		fmt.Fprintf(w, ", packed by the next write past %s\n", vault.FormatCount(int64(g.Threshold)))
	default:
		fmt.Fprintf(w, ", gc advised past %s\n", vault.FormatCount(int64(g.Threshold)))
	}
}

func newHeadStatus(v *vault.Vault, st *vault.State) headStatus {
	hs := headStatus{Deferred: []heads.HeadEvent{}, Conflicts: []heads.HeadEvent{}, Leases: heads.HeadLeases(v)}
	if hs.Leases == nil {
		hs.Leases = []heads.HeadLease{}
	}
	for _, h := range heads.HeadStates(st) {
		hs.Deferred = append(hs.Deferred, h.Deferred...)
		hs.Conflicts = append(hs.Conflicts, h.Conflicts...)
	}
	return hs
}

func (hs headStatus) print(w io.Writer) {
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

// healthReport is the vault's health as status and doctor report it: what
// vault.Health found, and the one line that says what to do.
type healthReport struct {
	OK       bool            `json:"ok"`
	Summary  string          `json:"summary,omitempty"` // what is wrong and what to do
	Problems []vault.Problem `json:"problems"`          // the ledger's, first first
	Config   string          `json:"config,omitempty"`  // why memvault.toml does not parse
	Fix      string          `json:"fix,omitempty"`     // the command or the edit that fixes it
	class    error           // the class of a refused write: the exit code doctor fails with
}

func newHealthReport(v *vault.Vault) healthReport {
	h, err := v.Health()
	rep := healthReport{OK: h.OK(), Summary: h.Summary(), Problems: h.Chain}
	if rep.Problems == nil {
		rep.Problems = []vault.Problem{}
	}
	switch {
	case err != nil:
		rep.OK, rep.Summary, rep.class = false, fmt.Sprintf("the ledger could not be checked: %v", err), err
	case h.Config != nil:
		rep.Config = h.Config.Error()
		rep.Fix = "edit " + filepath.Join(v.Root, "memvault.toml") + " by hand (memvault init writes a fresh one if you delete it)"
		rep.class = vault.ErrInvalid
	case len(h.Chain) > 0:
		rep.Fix = "memvault repair (memvault verify names every problem)"
		rep.class = vault.ErrCorrupt
	}
	return rep
}

// line is the health in one line: "ok", or what structured writes are
// refused for and what to do.
func (h healthReport) line() string {
	if h.OK {
		return "ok"
	}
	return "WRITES REFUSED: " + h.Summary
}
