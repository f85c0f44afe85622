package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/vault"
)

type doctorOptions struct {
	json bool
}

func newDoctorCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "doctor",
		Usage: "check the vault's health and show, per harness, which runtime events are wired and what degrades",
		Flags: []ucli.Flag{scopeFlag, jsonFlag},
	}
}

// doctorReport is `memvault doctor --json`.
type doctorReport struct {
	Vault     *doctorVault   `json:"vault"` // null: no vault found from here
	Harnesses []hooks.Wiring `json:"harnesses"`
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
}

// runDoctor checks the vault, when there is one, and every harness's
// wiring. A vault that refuses structured writes fails the command with
// the exit code such a write fails with (6 for the ledger, 2 for
// memvault.toml), once everything is printed: scripts and CI see it.
func runDoctor(c *ucli.Context, v *vault.Vault) error {
	opts := doctorOptions{json: c.Bool("json")}
	rep := doctorReport{}
	if v != nil {
		rep.Vault = &doctorVault{Path: v.Root, healthReport: newHealthReport(v)}
		rep.Vault.MergeDriverOK, rep.Vault.MergeDriver = vault.MergeDriversStatus(v.Root)
		links, err := v.LinkProblems()
		if err != nil {
			return err
		}
		rep.Vault.Links = append([]vault.Problem{}, links...)
		if len(links) > 0 && rep.Vault.OK {
			rep.Vault.OK, rep.Vault.class = false, vault.ErrCorrupt
			what := "1 symbolic link"
			if len(links) > 1 {
				what = fmt.Sprintf("%d symbolic links", len(links))
			}
			rep.Vault.Summary = what + " in the vault: memvault reads and writes nothing through them, so what needs them fails"
			rep.Vault.Fix = "replace each link with the file or folder it points to, or git rm it (memvault verify lists them)"
		}
	}
	var all []hooks.Wiring
	for _, name := range hooks.Names() {
		in, err := newInstaller(c, name)
		if err != nil {
			return err
		}
		all = append(all, in.Doctor())
	}
	rep.Harnesses = all
	if opts.json {
		if err := printJSON(c.App.Writer, rep); err != nil {
			return err
		}
	} else {
		printVaultCheck(c.App.Writer, rep.Vault)
		for _, d := range all {
			printWiring(c.App.Writer, d)
		}
	}
	if rep.Vault != nil && !rep.Vault.OK {
		return &silentError{code: exitCode(rep.Vault.class)}
	}
	return nil
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
	if d.OK {
		fmt.Fprintf(w, "  health:   ok\n")
		return
	}
	fmt.Fprintf(w, "  problem:  %s\n", d.Summary)
	for _, l := range d.Links {
		fmt.Fprintf(w, "  link:     %s\n", l)
	}
	if d.Fix != "" {
		fmt.Fprintf(w, "  fix:      %s\n", d.Fix)
	}
}

func printWiring(w io.Writer, d hooks.Wiring) {
	if d.Config == "" {
		fmt.Fprintf(w, "%-12s not installed (memvault install %s)\n", d.Harness, d.Harness)
		return
	}
	fmt.Fprintf(w, "%-12s %s\n", d.Harness, d.Config)
	fmt.Fprintf(w, "  wired:    %s\n", strings.Join(d.Wired, ", "))
	if len(d.Missing) > 0 {
		fmt.Fprintf(w, "  missing:  %s (memvault install %s)\n", strings.Join(d.Missing, ", "), d.Harness)
	}
	events := make([]string, 0, len(d.Degraded))
	for ev := range d.Degraded {
		events = append(events, ev)
	}
	sort.Strings(events)
	for _, ev := range events {
		fmt.Fprintf(w, "  degraded: %s: %s\n", ev, d.Degraded[ev])
	}
	for _, p := range d.Problems {
		fmt.Fprintf(w, "  problem:  %s\n", p)
	}
}
