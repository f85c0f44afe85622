package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/transcript"
)

// Printers that several commands share: JSON, a ledger row, a transcript
// message, a render report.

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jsonError is an error as a command run with --json reports it: one line
// of JSON on stderr, the last line there (docs/API.md, "Errors in JSON
// mode"). The exit code is the same as without --json.
type jsonError struct {
	Error string `json:"error"`          // the message, as the text line says it without "memvault: "
	Code  int    `json:"code"`           // the exit code
	Class string `json:"class"`          // the exit code's name: invalid, not_found, conflict, …
	Hint  string `json:"hint,omitempty"` // what to do, when there is something
}

// errorClasses names each exit code in a JSON error.
func errorClasses() map[int]string {
	return map[int]string{
		ExitInternal: "internal", ExitUsage: "invalid", ExitNotFound: "not_found",
		ExitConflict: "conflict", ExitBusy: "busy", ExitCorrupt: "corrupt",
		ExitIO: "io", ExitRemote: "remote", ExitForbidden: "forbidden",
	}
}

// printJSONError writes err, which made the command at path exit with
// code, as one line of JSON; its class is the error's own (a hook's
// error is reported, and its exit is 0). A command that printed its own
// report (verify, doctor) is said to have failed, pointing at that report.
func printJSONError(w io.Writer, path string, err error, code int) {
	e := jsonError{Error: err.Error(), Code: code, Class: errorClasses()[exitCode(err)], Hint: hintOf(err)}
	var silent *silentError
	if errors.As(err, &silent) {
		e.Error = strings.TrimSpace(path + " failed: its report says why")
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(e)
}

// printRow writes one ledger row on one line (ledger, expand).
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
		status := r.Status
		if status == "" || status == vault.StatusActive {
			status = vault.StatusClosed
		}
		marks = append(marks, status+" by "+r.ClosedBy)
	}
	if len(marks) > 0 {
		text += "  [" + strings.Join(marks, "; ") + "]"
	}
	fmt.Fprintf(w, "%s  %s  %-16s %-20s %s\n", r.TS, r.ID, kind, thread, text)
}

// printMessage writes a transcript message: a header line, then its text
// indented (transcript show, expand).
func printMessage(w io.Writer, m transcript.Stored) {
	who := string(m.Role)
	if m.Speaker != "" && m.Speaker != who {
		who += "/" + m.Speaker
	}
	if m.Kind != "" {
		who += " [" + m.Kind + "]"
	}
	ts := ""
	if !m.TS.IsZero() {
		ts = m.TS.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "%d  %s  %s  %s\n", m.N, ts, who, m.ID)
	for _, line := range strings.Split(strings.TrimRight(m.Text, "\n"), "\n") {
		fmt.Fprintf(w, "    %s\n", line)
	}
}

// printExplain writes a render report: the budget, and per section what
// was shown and what was left out, row by row, with the reason (render,
// refresh).
func printExplain(w io.Writer, r *render.Report) {
	fmt.Fprintf(w, "%s: %d of %d tokens (headings and fixed lines: %d)\n", r.Head, r.Tokens, r.Budget, r.Skeleton)
	for _, s := range r.Sections {
		if s.LeftOut == 0 {
			fmt.Fprintf(w, "  %s: %d of %d shown\n", s.Title, s.Shown, s.Rows)
			continue
		}
		fmt.Fprintf(w, "  %s: %d of %d shown, %d left out:\n", s.Title, s.Shown, s.Rows, s.LeftOut)
		for _, d := range s.Dropped {
			where := ""
			if d.Thread != "" && d.Thread != d.ID {
				where = " [" + d.Thread + "]"
			}
			fmt.Fprintf(w, "    %s%s %s: %s\n", d.ID, where, d.Text, d.Reason)
		}
	}
}
