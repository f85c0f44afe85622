// Package units writes the quantities memvault shows people: a byte count
// in binary units ("3.0 MiB") and a count with its thousands separated
// ("12,345"). The gc report, the status, the hint after a write and the
// progress of long work all print through it, so the same number reads the
// same everywhere.
package units

import (
	"fmt"
	"time"
)

// Bytes prints a byte count in binary units (B, KiB, MiB, GiB).
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Count prints n with a comma between groups of three digits.
func Count(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + Count(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// HeldFor says how long a lock taken at since has been held, as precisely
// as a person reading a busy message cares: "350 ms", "1.2 s", "3m20s".
// Every lock's holder is named in these words, the vault lock's (its
// lease) and those of the locks the features above the engine keep alike.
func HeldFor(since time.Time) string {
	d := time.Since(since)
	switch {
	case d < 0:
		return "since " + since.UTC().Format(time.RFC3339) // another machine's clock is ahead
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}
