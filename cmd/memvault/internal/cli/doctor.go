package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/executor"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/recall"
)

// exitSetup is doctor's exit code when the vault is sound but a harness is
// not set up to run memvault's hooks (docs/API.md, "Exit codes").
const exitSetup = 9

type doctorOptions struct {
	scope string // the harnesses' wiring to check: project or user
	json  bool
}

func newDoctorCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "doctor",
		Usage: "check the vault (exists, verifies, not in need of repair) and each harness's wiring and trust, one line per problem with its fix",
	}
}

func (o *doctorOptions) flags() []ucli.Flag {
	return []ucli.Flag{newScopeFlag(&o.scope), newJSONFlag(&o.json)}
}

// doctorReport is `memvault doctor --json`.
type doctorReport struct {
	// OK is false when any problem is an error: the exit code is then not 0.
	OK        bool           `json:"ok"`
	Vault     *doctorVault   `json:"vault"` // null: no vault found from here
	Harnesses []hooks.Wiring `json:"harnesses"`
	// Problems is every problem found, the vault's and each harness's, in
	// the order printed: what a script acts on.
	Problems []doctorProblem `json:"problems"`
	// Embed is semantic search's endpoint as it answered, with [embed].
	Embed *recall.EmbedStatus `json:"embed,omitempty"`
}

// doctorProblem is one problem and its fix, with where it was found:
// "vault" or a harness's name.
type doctorProblem struct {
	Harness string `json:"harness"`
	hooks.Problem
}

// doctorVault is the vault check: where the vault is and its health.
type doctorVault struct {
	Path string `json:"path"`
	healthReport
	// MergeDriver says whether a plain git pull merges the vault with
	// memvault's driver (docs/specs/STORAGE.md, "Merging clones"); a
	// missing driver is a warning, not a failure: nothing is wrong until
	// two clones meet.
	MergeDriver   string `json:"merge_driver"`
	MergeDriverOK bool   `json:"merge_driver_ok"`
	// Links names each symbolic link in the vault, on disk or committed:
	// memvault refuses to read or write through them, so each fails the
	// check.
	Links []vault.Problem `json:"links"`
	// Verify is what an incremental verification (memvault verify
	// --incremental) found besides the links, when the writers' check
	// passed: the first problems.
	Verify []vault.Problem `json:"verify"`
	// Jobs is the hooks' job queue (docs/HOOKS.md, "Jobs").
	Jobs hookstate.JobQueue `json:"jobs"`
}

// runDoctor checks the vault, when there is one, and every harness's
// wiring, then prints one line per problem with its fix. The exit code
// is the first that applies: a vault that refuses structured writes or
// fails verification fails with the code such a write fails with (6 for
// the ledger and links, 2 for memvault.toml); no vault where hooks are
// installed at project scope, 3; a harness problem, 9 (exitSetup).
// Warnings (a missing merge driver, hooks running another memvault) do
// not fail it. Everything is printed first: scripts and CI see it.
func runDoctor(_ context.Context, opts doctorOptions, e env, v *vault.Vault) error {
	rep := doctorReport{Problems: []doctorProblem{}}
	if v != nil {
		d, err := checkVault(v)
		if err != nil {
			return err
		}
		rep.Vault = d
	}
	for _, name := range hooks.Names() {
		in, err := newInstaller(opts.scope, name)
		if err != nil {
			return err
		}
		rep.Harnesses = append(rep.Harnesses, in.Doctor())
	}
	code := ExitOK
	if d := rep.Vault; d != nil {
		if !d.OK {
			rep.add("vault", hooks.Problem{Problem: d.Summary, Fix: d.Fix, Severity: hooks.SeverityError})
			code = exitCode(d.class)
		}
		if !d.MergeDriverOK {
			rep.add("vault", hooks.Problem{Problem: d.MergeDriver, Fix: "memvault install git", Severity: hooks.SeverityWarning})
		}
		for _, p := range executorProblems(v) {
			rep.add("executors", p)
		}
		if p, ok := jobsProblem(d.Jobs, time.Now()); ok {
			rep.add("jobs", p)
		}
		rep.Embed = embedCheck(v, &rep)
	} else if p, ok := noVaultProblem(opts.scope, rep.Harnesses); ok {
		rep.add("vault", p)
		if p.Severity == hooks.SeverityError {
			code = ExitNotFound
		}
	}
	for _, w := range rep.Harnesses {
		for _, p := range w.Problems {
			rep.add(w.Harness, p)
			if p.Severity == hooks.SeverityError && code == ExitOK {
				code = exitSetup
			}
		}
	}
	rep.OK = code == ExitOK
	if opts.json {
		if err := printJSON(e.stdout, rep); err != nil {
			return err
		}
	} else {
		printDoctor(e.stdout, rep)
	}
	if code != ExitOK {
		return &silentError{code: code}
	}
	return nil
}

func (r *doctorReport) add(where string, p hooks.Problem) {
	r.Problems = append(r.Problems, doctorProblem{Harness: where, Problem: p})
}

// checkVault is the vault's part: its health (what a writer would refuse),
// its links, an incremental verification when the writers' check passed,
// and its merge driver.
func checkVault(v *vault.Vault) (*doctorVault, error) {
	d := &doctorVault{Path: v.Root, healthReport: newHealthReport(v), Verify: []vault.Problem{}}
	d.MergeDriverOK, d.MergeDriver = gitrepo.MergeDriversStatus(v.Root)
	if q, err := hookstate.JobQueueStatus(v); err == nil {
		d.Jobs = q
	}
	links, err := v.LinkProblems()
	if err != nil {
		return nil, err
	}
	d.Links = append([]vault.Problem{}, links...)
	if len(links) > 0 && d.OK {
		d.OK, d.class = false, vault.ErrCorrupt
		what := "1 symbolic link"
		if len(links) > 1 {
			what = fmt.Sprintf("%d symbolic links", len(links))
		}
		d.Summary = what + " in the vault: memvault reads and writes nothing through them, so what needs them fails"
		d.Fix = "replace each link with the file or folder it points to, or git rm it (memvault verify lists them)"
	}
	if !d.OK {
		return d, nil
	}
	// The incremental verification: the writers' check, on the same
	// stamps, and what HEAD commits, stray files and a torn tail; it reads
	// only what changed since the last clean check. memvault verify reads
	// every event, reference and node.
	rep, err := v.VerifyIncremental()
	if err != nil {
		d.OK, d.class = false, err
		d.Summary = "the vault could not be verified: " + err.Error()
		d.Fix = "memvault verify says more"
		return d, nil
	}
	for _, p := range rep.Problems {
		if !p.IsLink() {
			d.Verify = append(d.Verify, p)
		}
	}
	if len(d.Verify) > 0 {
		more := ""
		if len(d.Verify) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(d.Verify)-1)
		}
		d.OK, d.class = false, vault.ErrCorrupt
		d.Summary = fmt.Sprintf("verification fails: %s%s", d.Verify[0], more)
		d.Fix = "memvault verify names every problem and what to do (memvault repair re-chains a broken ledger)"
	}
	return d, nil
}

// noVaultProblem is the problem of hooks installed with no vault found
// from here: they run and store nothing. At project scope that is an
// error (the project's hooks do nothing until `memvault init`); at user
// scope a warning (every project without a vault is like this one).
func noVaultProblem(scope string, ws []hooks.Wiring) (hooks.Problem, bool) {
	var installed []string
	for _, w := range ws {
		if w.Installed() {
			installed = append(installed, w.Harness)
		}
	}
	if len(installed) == 0 {
		return hooks.Problem{}, false
	}
	what := strings.Join(installed, ", ")
	if scope == string(hooks.ScopeUser) {
		return hooks.Problem{Problem: "no vault from here: the user-scope hooks of " + what + " store nothing in this folder",
			Fix: "memvault init (in the project)", Severity: hooks.SeverityWarning}, true
	}
	return hooks.Problem{Problem: "no vault from here: the hooks of " + what + " installed here run and store nothing until there is one",
		Fix: "memvault init", Severity: hooks.SeverityError}, true
}

// printDoctor prints the vault's section, each harness's, and a last line
// that counts the problems. Every problem is one line with its fix:
// `  problem:  WHAT; fix: FIX` (a warning: `  warning:  …`); the vault's
// own problem keeps its `problem:`, `link:` and `fix:` lines.
func printDoctor(w io.Writer, rep doctorReport) {
	printVaultCheck(w, rep.Vault)
	if e := rep.Embed; e != nil && e.Dimensions > 0 {
		fmt.Fprintf(w, "embed: %s answers %s with %d dimensions in %s; %d vectors cached\n", e.URL, e.Model, e.Dimensions,
			e.Latency.Round(time.Millisecond), e.Vectors)
	}
	for _, p := range rep.Problems {
		if p.Harness == "executors" || p.Harness == "jobs" || p.Harness == "embed" {
			printProblem(w, p.Problem)
		}
	}
	if rep.Vault == nil {
		for _, p := range rep.Problems {
			if p.Harness == "vault" {
				printProblem(w, p.Problem) // no vault, with hooks installed
			}
		}
	}
	for _, d := range rep.Harnesses {
		printWiring(w, d)
	}
	errs, warns := 0, 0
	for _, p := range rep.Problems {
		if p.Severity == hooks.SeverityError {
			errs++
		} else {
			warns++
		}
	}
	switch {
	case errs == 0 && warns == 0:
		fmt.Fprintf(w, "doctor: no problems\n")
	default:
		fmt.Fprintf(w, "doctor: %s, %s\n", plural(errs, "problem"), plural(warns, "warning"))
	}
}

func printProblem(w io.Writer, p hooks.Problem) {
	label := "problem:"
	if p.Severity == hooks.SeverityWarning {
		label = "warning:"
	}
	fmt.Fprintf(w, "  %-9s %s; fix: %s\n", label, p.Problem, p.Fix)
}

func printVaultCheck(w io.Writer, d *doctorVault) {
	if d == nil {
		fmt.Fprintf(w, "%-12s none found from here (memvault init creates one)\n", "vault")
		return
	}
	fmt.Fprintf(w, "%-12s %s\n", "vault", d.Path)
	label := "  merging:  "
	if !d.MergeDriverOK {
		label = "  warning:  "
	}
	fmt.Fprintf(w, "%s%s\n", label, d.MergeDriver)
	fmt.Fprintf(w, "  jobs:     %s\n", jobsLine(d.Jobs, time.Now()))
	if d.OK {
		fmt.Fprintf(w, "  health:   ok\n")
		return
	}
	fmt.Fprintf(w, "  problem:  %s\n", d.Summary)
	for _, l := range d.Links {
		fmt.Fprintf(w, "  link:     %s\n", l)
	}
	for _, p := range d.Verify {
		fmt.Fprintf(w, "  verify:   %s\n", p)
	}
	if d.Fix != "" {
		fmt.Fprintf(w, "  fix:      %s\n", d.Fix)
	}
}

func printWiring(w io.Writer, d hooks.Wiring) {
	if !d.Installed() {
		fmt.Fprintf(w, "%-12s not installed (memvault install %s)\n", d.Harness, d.Harness)
		return
	}
	fmt.Fprintf(w, "%-12s %s\n", d.Harness, d.Config)
	fmt.Fprintf(w, "  wired:    %s\n", strings.Join(d.Wired, ", "))
	events := make([]string, 0, len(d.Degraded))
	for ev := range d.Degraded {
		events = append(events, ev)
	}
	sort.Strings(events)
	for _, ev := range events {
		fmt.Fprintf(w, "  degraded: %s: %s\n", ev, d.Degraded[ev])
	}
	switch m := d.MCP; {
	case m == nil:
	case !m.Registered:
		fmt.Fprintf(w, "  mcp:      not registered in %s (memvault install %s registers it)\n", m.Config, d.Harness)
	case !m.Ours:
		fmt.Fprintf(w, "  mcp:      %s names another server %q: %s\n", m.Config, "memvault", strings.Join(m.Command, " "))
	default:
		fmt.Fprintf(w, "  mcp:      %s in %s\n", strings.Join(m.Command, " "), m.Config)
	}
	for _, p := range d.Problems {
		printProblem(w, p)
	}
}

// executorProblems are the warnings of the executor registry
// (docs/EXECUTORS.md): each inactive executor with its reason, or a
// registry that does not read. delegate does not use them; nothing else
// fails.
func executorProblems(v *vault.Vault) []hooks.Problem {
	es, err := executor.List(v)
	if err != nil {
		return []hooks.Problem{{Problem: "executors: " + err.Error(), Fix: "fix the [executors.NAME] tables of memvault.toml", Severity: hooks.SeverityWarning}}
	}
	var out []hooks.Problem
	for _, e := range es {
		if e.Status == executor.StatusInactive {
			out = append(out, hooks.Problem{Problem: "executor " + e.Name + " is inactive: " + e.Reason,
				Fix: "memvault executor ping " + e.Name + " once it answers, or memvault executor remove " + e.Name, Severity: hooks.SeverityWarning})
		}
	}
	return out
}

// embedCheck asks [embed]'s endpoint for a vector (recall.CheckEmbedEndpoint)
// and adds a warning when it fails: recall then stays lexical.
func embedCheck(v *vault.Vault, rep *doctorReport) *recall.EmbedStatus {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, ok, err := recall.CheckEmbedEndpoint(ctx, v)
	if !ok {
		return nil
	}
	if err != nil {
		rep.add("embed", hooks.Problem{Problem: "semantic search: " + err.Error() + "; recall stays lexical",
			Fix: "check that the endpoint runs and serves the model, or remove [embed] from memvault.toml", Severity: hooks.SeverityWarning})
	}
	return &st
}
