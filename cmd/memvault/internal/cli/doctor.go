package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/hooks"
)

type doctorOptions struct {
	json bool
}

func newDoctorCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "doctor",
		Usage: "show, per harness, which runtime events are wired and what degrades",
		Flags: []ucli.Flag{scopeFlag, jsonFlag},
	}
}

func runDoctor(c *ucli.Context) error {
	opts := doctorOptions{json: c.Bool("json")}
	var all []hooks.Wiring
	for _, name := range hooks.Names() {
		in, err := newInstaller(c, name)
		if err != nil {
			return err
		}
		all = append(all, in.Doctor())
	}
	if opts.json {
		return printJSON(c.App.Writer, all)
	}
	for _, d := range all {
		printWiring(c.App.Writer, d)
	}
	return nil
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
