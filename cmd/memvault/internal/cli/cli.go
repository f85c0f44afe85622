// Package cli is memvault's command line: flag parsing, output and exit
// codes over the vault package. Commands stay thin; the root opens the vault,
// and for commands that write, takes the lock and commits once. A command's
// flags fill its options (xOptions); its function (runX, or prepareX for a
// transaction) takes them and an env, never urfave/cli's context, which
// only the root in actions.go reads.
package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fileio"
)

// Exit codes, documented in docs/API.md.
const (
	ExitOK       = 0
	ExitInternal = 1 // a bug or an unexpected failure
	ExitUsage    = 2 // bad flags or bad input
	ExitNotFound = 3 // no vault, no such event
	ExitConflict = 4 // the request contradicts the vault's state
	ExitBusy     = 5 // the vault lock was not free in time
	ExitCorrupt  = 6 // verification failed
	ExitIO       = 7 // full or read-only disk, permissions
	ExitRemote   = 8 // sync: no remote, unreachable, not a vault
	// 9 is doctor's setup problem (exitSetup, doctor.go).
	ExitForbidden = 10 // the vault's policy refuses the write (docs/POLICY.md)
)

// Version is set at build time with -ldflags "-X ...cli.Version=v1.2.3".
var Version = "dev"

// Revision is the commit built from, set at build time with -ldflags "-X
// ...cli.Revision=$(git describe --always --dirty --abbrev=40 --exclude='*')"
// where the toolchain records none (docs/API.md, `memvault version`).
var Revision = ""

// Main runs memvault with args (without the program name) on the process's
// standard streams and returns the exit code.
func Main(args []string) int {
	// The vault is private (docs/RELIABILITY.md, "The vault is private"):
	// whatever this process creates, and whatever the processes it starts
	// create (git's gc, fetch, push and merge, Bleve's index, go-git's
	// packs), is its owner's alone, whatever umask the person runs with.
	// memvault's own writes set their modes; this covers the writers it does
	// not control. A person's files outside the vault (a harness's settings,
	// a project's git hook) are created with the person's umask again
	// (env.asUser). A stricter umask stays: it can only narrow.
	user := syscall.Umask(privateUmask)
	syscall.Umask(user | privateUmask)
	// A command lives for milliseconds and allocates in bursts; collecting
	// less often trades a little memory for less time in the collector.
	debug.SetGCPercent(400)
	// MEMVAULT_CPUPROFILE=FILE writes a CPU profile of the command, for
	// measuring a whole process the way the benchmarks time it.
	// The profile is kept in memory and written once stopped, through
	// fileio like every other file (a few kilobytes; the write comes after
	// the profile ends, so it does not show in it).
	if path := os.Getenv("MEMVAULT_CPUPROFILE"); path != "" {
		var prof bytes.Buffer
		if pprof.StartCPUProfile(&prof) == nil {
			defer func() {
				pprof.StopCPUProfile()
				// The profile is the person's file, not the vault's:
				// os.Create's mode under their umask.
				syscall.Umask(user)
				_ = fileio.WriteKeepMode(path, prof.Bytes(), 0o666)
			}()
		}
	}
	return run(args, os.Stdin, os.Stdout, os.Stderr, user)
}

// privateUmask is the umask memvault works under, added to the person's: no
// bits for the group or others, so folders come out 0700, files 0600, and
// git's read-only objects and packs 0400.
const privateUmask = 0o077

// Run is Main with explicit streams, for tests. It leaves the process's
// umask as it is.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(args, stdin, stdout, stderr, -1)
}

// run runs the command line; userUmask is the umask the person started
// memvault with, or -1 when the process's umask was left alone.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, userUmask int) int {
	app := newApp(stdin, stdout, stderr)
	if userUmask >= 0 {
		app.Metadata = map[string]any{userUmaskKey: userUmask}
	}
	line := parseLine(app, args)
	var err error
	switch {
	case line.err != nil:
		err = line.err
	case line.help, line.cmd == nil && !line.version, line.cmd != nil && line.cmd.Action == nil:
		// Help asked for, no command, or a group named without one of its
		// commands: the help of what was named.
		err = printHelp(stdout, app, line.path, helpOptions{})
	case line.version:
		err = printVersion(stdout, line.json)
	default:
		err = app.Run(line.argv())
	}
	if err == nil {
		return ExitOK
	}
	code := exitCode(err)
	if len(line.path) > 0 && line.path[0] == "hook" && !line.help {
		// A hook fails open, even on a line it cannot read: a harness
		// takes some exit codes as "block the prompt" (Claude Code's 2).
		code = ExitOK
	}
	var silent *silentError
	switch {
	case line.json:
		printJSONError(stderr, strings.Join(line.path, " "), err, code)
	case !errors.As(err, &silent):
		fmt.Fprintf(stderr, "memvault: %v\n", err)
		if h := hintOf(err); h != "" {
			fmt.Fprintf(stderr, "hint: %s\n", h)
		}
	}
	return code
}

// userUmaskKey names the person's umask in the app's metadata.
const userUmaskKey = "userUmask"

// silentError carries an exit code for a command that already printed its
// own report (verify prints every problem, then fails).
type silentError struct{ code int }

func (e *silentError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// usageError marks a mistake in flags or arguments, with what to do about
// it when there is something to say.
type usageError struct{ msg, hint string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// hintOf is the hint an error carries: a usage error's, or a vault error's.
func hintOf(err error) string {
	var usage *usageError
	if errors.As(err, &usage) && usage.hint != "" {
		return usage.hint
	}
	return vault.HintOf(err)
}

func exitCode(err error) int {
	var silent *silentError
	var usage *usageError
	switch {
	case errors.As(err, &silent):
		return silent.code
	case errors.As(err, &usage), errors.Is(err, vault.ErrInvalid):
		return ExitUsage
	case errors.Is(err, vault.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, vault.ErrConflict):
		return ExitConflict
	case errors.Is(err, vault.ErrBusy):
		return ExitBusy
	case errors.Is(err, vault.ErrCorrupt):
		return ExitCorrupt
	case errors.Is(err, vault.ErrIO):
		return ExitIO
	case errors.Is(err, vault.ErrRemote):
		return ExitRemote
	case errors.Is(err, vault.ErrForbidden):
		return ExitForbidden
	}
	return ExitInternal
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *ucli.App {
	app := &ucli.App{
		Name:    "memvault",
		Usage:   "lossless working memory for AI coding agents",
		Version: Version,
		Reader:  stdin,
		Writer:  stdout, ErrWriter: stderr,
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "vault", EnvVars: []string{"MEMVAULT_DIR"}, Usage: "vault folder (default: the nearest .memory/ upward)"},
			&ucli.StringFlag{Name: "agent", EnvVars: []string{"MEMVAULT_AGENT"}, Usage: "agent id (default: memvault.toml, else \"default\")"},
		},
		Commands: []*ucli.Command{
			newInitCommand(),
			newRememberCommand(),
			newCommitmentCommand(),
			newClaimCommand(),
			newReflectCommand(),
			newRetractCommand(),
			newSupersedeCommand(),
			newLedgerCommand(),
			newReplayCommand(),
			newMetricsCommand(),
			newExportCommand(),
			newImportCommand(),
			newVerifyCommand(),
			newRepairCommand(),
			newLogCommand(),
			newStatusCommand(),
			newTranscriptCommand(),
			newSessionsCommand(),
			newSummarizeCommand(),
			newCompactCommand(),
			newCondenseCommand(),
			newNodesCommand(),
			newExpandCommand(),
			newRecallCommand(),
			newReindexCommand(),
			newHookCommand(),
			newContextCommand(),
			newMCPCommand(),
			newServeCommand(),
			newInstallCommand(),
			newUninstallCommand(),
			newDoctorCommand(),
			newRenderCommand(),
			newRefreshCommand(),
			newThreadsCommand(),
			newEditCommand(),
			newResolveCommand(),
			newContinuityCommand(), newLearnCommand(), newDecideCommand(), newGoalCommand(), newNextCommand(), newDoneCommand(),
			newGCCommand(),
			newMergeDriverCommand(),
			newSyncCommand(),
			newPolicyCommand(),
			newExecutorCommand(),
			newDelegateCommand(),
			newAuditCommand(),
			newJobsCommand(),
			newHelpCommand(),
			newVersionCommand(),
		},
		// The root answers help and version itself (run, help.go).
		HideHelp:        true,
		HideHelpCommand: true,
		HideVersion:     true,
		ExitErrHandler:  func(*ucli.Context, error) {}, // Run picks the exit code
	}
	app.OnUsageError = func(_ *ucli.Context, err error, _ bool) error {
		return flagError("", app.Flags, err)
	}
	setActions(app.Commands, "", commandActions())
	category := map[string]string{}
	for _, g := range commandGroups() {
		for _, name := range g.commands {
			category[name] = g.title
		}
	}
	for _, c := range app.Commands {
		c.Category = category[c.Name]
		setUsageHandler(c, c.Name)
	}
	return app
}

// Commands lists every command memvault runs, by its path ("remember",
// "commitment open"), sorted: what a test that must try each command
// enumerates, so that a new command cannot be left out of it.
func Commands() []string {
	var out []string
	for path := range commandActions() {
		out = append(out, path)
	}
	slices.Sort(out)
	return out
}

// commandActions declares, for every command by its path, what it does to
// the vault (see access) and the function that does it, gathered from the
// tables of each area below; a path declared twice is a programming error.
func commandActions() map[string]action {
	out := map[string]action{
		"init": noVault(runInit), // creates the vault, so there is none to open yet

		// Help and the version read nothing but the binary.
		"help":    noVault(runHelp),
		"version": noVault(runVersion),
	}
	for _, area := range []map[string]action{ledgerActions(), lineageActions(), harnessActions(), executorActions(), headActions()} {
		for path, a := range area {
			if _, dup := out[path]; dup {
				panic("cli: command " + path + " declared twice")
			}
			out[path] = a
		}
	}
	return out
}

// ledgerActions declares the commands of the rows of the ledger: recording,
// correcting, listing, exporting and checking them.
func ledgerActions() map[string]action {
	return map[string]action{
		"remember":         inTxPrepared(prepareRemember),
		"commitment open":  inTxPrepared(prepareCommitmentOpen),
		"commitment close": inTx(runCommitmentClose),
		"commitment show":  reads(runCommitmentShow),
		"claim":            inTxPrepared(prepareClaim),
		"reflect":          inTxPrepared(prepareReflect),
		"retract":          inTx(runRetract),
		"supersede":        inTx(runSupersede),

		"ledger":  reads(runLedger),
		"replay":  reads(runReplay),
		"metrics": reads(runMetrics),
		// export reads the vault and writes a file outside it (fileio);
		// import checks the export's hashes before the lock, then writes
		// in one transaction.
		"export": reads(runExport),
		"import": inTxPrepared(prepareImport),
		"verify": reads(runVerify),
		// repair.Run takes the lock, plans under it and commits through
		// a transaction of its own.
		"repair": ownWrites(runRepair),
		"log":    reads(runLog),
		"status": reportsHealth(runStatus),
	}
}

// lineageActions declares the commands of Tier 3: transcripts, sessions,
// nodes, recall and its index.
func lineageActions() map[string]action {
	return map[string]action{
		"transcript append": inTxPrepared(runTranscriptAppend),
		// lineage.Import takes the lock itself and commits what is new, then
		// brings the index up to date.
		"transcript import": ownWrites(runTranscriptImport),
		"transcript show":   reads(runTranscriptShow),
		"sessions":          reads(runSessions),
		"summarize":         distillModel(prepareSummarize),
		"compact":           distillModel(prepareCompact),
		"condense":          distillModel(prepareCondense),
		"nodes":             reads(runNodes),
		"expand":            reads(runExpand),

		"recall": reads(runRecall),
		// recall.Reindex takes the vault lock itself while it rebuilds the
		// index; it commits nothing.
		"reindex": ownWrites(runReindex),
	}
}

// harnessActions declares the commands of what harnesses, git and people at
// the vault's edges run: hooks, the servers, installers, doctor, the merge
// driver, gc and sync.
func harnessActions() map[string]action {
	return map[string]action{
		// Hooks fail open: hook finds the vault itself and logs, never fails.
		"hook":    noVault(runHook),
		"context": reportsHealth(runContext),
		// The MCP server opens the vault afresh for each request and holds
		// the lock only inside a request's write (cmd/memvault/internal/mcp).
		"mcp": serves(runMCP),
		// The web view, the same: every page opens the vault for its
		// request and reads without the lock; each --write route is one
		// transaction (cmd/memvault/internal/web).
		"serve": serves(runServe),
		// The installers change the harness's config and git's hooks, not
		// the vault; install git also registers the merge driver and, when
		// .gitattributes lacks it, commits it through the library
		// (clones.EnsureMergeSetup). doctor checks them, and the vault if
		// there is one.
		"install":   ownWrites(runInstall),
		"uninstall": noVault(runUninstall),
		"doctor":    inspects(runDoctor),
		// Git runs the merge driver on its temporary copies of three
		// versions of one file, in the middle of its own merge: no vault to
		// open, no lock to take.
		"merge-driver": noVault(runMergeDriver),

		// gc.Run takes the vault lock itself and repacks git's objects; it
		// commits nothing.
		"gc": ownWrites(runGC),
		// clones.Sync takes the vault lock itself for the merge; the join and
		// the render of the heads commit on their own.
		"sync": ownWrites(runSync),
	}
}

// executorActions declares the commands of the policy, executors,
// delegation, the audit and the job queue.
func executorActions() map[string]action {
	return map[string]action{
		// The policy (docs/POLICY.md): set records one policy event, which
		// the transaction checks like any other; show only reads.
		"policy set":  inTxPrepared(preparePolicySet),
		"policy show": reads(runPolicyShow),

		// Executors (docs/EXECUTORS.md): add and ping run the executor's
		// ping before the lock, then change memvault.toml in one
		// transaction; delegate runs the executors without the lock and
		// records each result in a transaction of its own
		// (executor.Delegate).
		"executor add":    inTxPrepared(prepareExecutorAdd),
		"executor ping":   inTxPrepared(prepareExecutorPing),
		"executor remove": inTxPrepared(prepareExecutorRemove),
		"executor list":   reads(runExecutorList),
		"executor show":   reads(runExecutorShow),
		"delegate":        ownWrites(runDelegate),
		"audit":           reads(runAudit),
		"audit replay":    reads(runAuditReplay),

		// The job queue (docs/HOOKS.md, "Jobs"): jobs lists it; jobs run
		// runs it, asking [summarise]'s executor without the vault lock
		// and writing each job in transactions of its own (hooks.Work).
		"jobs":     reads(runJobs),
		"jobs run": ownWrites(runJobsRun),
	}
}

// headActions declares the commands of the heads and the CONTINUITY.md protocol.
func headActions() map[string]action {
	return map[string]action{
		// The heads: heads.Refresh, EditHead and ResolveHeads take the heads'
		// leases before the vault lock, so they manage their own writes
		// (edit may commit twice: a first render, then the saved file).
		"render":       ownWrites(runRender),
		"refresh":      ownWrites(runRefresh),
		"threads":      reads(runThreads),
		"threads show": reads(runThreadsShow),
		"edit":         ownWrites(runEdit),
		"resolve":      ownWrites(runResolve),

		// The protocol: continuity.UpdateContinuity takes CONTINUITY.md's lease
		// and the vault lock itself, and refreshes the file in the same
		// commit as the change.
		"continuity init":      ownWrites(continuityWrite(runContinuityInit)),
		"continuity status":    reads(runContinuityStatus),
		"continuity learnings": reads(runContinuityLearnings),
		"continuity decisions": reads(runContinuityDecisions),
		"continuity audit":     ownWrites(runContinuityAudit), // --dry-run only reads
		"continuity index":     ownWrites(runContinuityIndex),
		"continuity budget":    reads(runContinuityBudget),
		"learn":                ownWrites(continuityWrite(runLearn)),
		"decide":               ownWrites(continuityWrite(runDecide)),
		"goal":                 ownWrites(continuityWrite(runGoal)),
		"next":                 ownWrites(continuityWrite(runNext)),
		"done":                 ownWrites(continuityWrite(runDone)),
	}
}

// setUsageHandler words the flag errors of the command at path, and of
// its subcommands, as memvault's, and turns urfave/cli's help off for them.
func setUsageHandler(c *ucli.Command, path string) {
	c.HideHelp, c.HideHelpCommand = true, true
	c.OnUsageError = func(_ *ucli.Context, err error, _ bool) error {
		return flagError(path, c.Flags, err)
	}
	for _, s := range c.Subcommands {
		setUsageHandler(s, path+" "+s.Name)
	}
}
