package vault

// The commit message of a transaction: a readable subject first, the
// events in the body, the Memvault-* trailers last.

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// message builds the commit message: a readable subject, a body listing the
// events when there are several, and the Memvault-* trailers last.
func (tx *Tx) message() string {
	subject := tx.subject
	if subject == "" && len(tx.events) > 0 {
		ev := tx.events[0]
		subject = ev.Kind + ": " + oneLine(ev.Text)
		if ev.Text == "" && len(ev.Links) > 0 {
			subject = ev.Kind + ": " + ev.Links[0]
		}
	}
	var b strings.Builder
	b.WriteString(clip(subject, 72))
	b.WriteString("\n\n")
	if len(tx.events) > 1 {
		for _, ev := range tx.events {
			fmt.Fprintf(&b, "- %s: %s\n", ev.Kind, clip(oneLine(ev.Text), 68))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Memvault-Agent: %s\n", tx.opts.Agent)
	if tx.opts.Session != "" {
		fmt.Fprintf(&b, "Memvault-Session: %s\n", tx.opts.Session)
	}
	if tx.opts.Harness != "" {
		fmt.Fprintf(&b, "Memvault-Harness: %s\n", tx.opts.Harness)
	}
	threads := map[string]bool{}
	for _, ev := range tx.events {
		if ev.Thread != "" {
			threads[ev.Thread] = true
		}
	}
	sorted := make([]string, 0, len(threads))
	for t := range threads {
		sorted = append(sorted, t)
	}
	sort.Strings(sorted)
	for _, t := range sorted {
		fmt.Fprintf(&b, "Memvault-Thread: %s\n", t)
	}
	for _, ev := range tx.events {
		fmt.Fprintf(&b, "Memvault-Event: %s\n", ev.ID)
	}
	for _, id := range tx.nodes {
		fmt.Fprintf(&b, "Memvault-Node: %s\n", id)
	}
	return b.String()
}

// oneLine folds a multi-line text for a one-line display.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clip shortens s to at most n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
