package ops

import (
	"strconv"
	"strings"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// ParseSince reads a point in time as the filters take it: a date
// (2026-11-22, local midnight), an RFC 3339 time, or an age before now
// (7d, 12h).
func ParseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days >= 0 {
			return now.AddDate(0, 0, -days), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fault.New(vault.ErrInvalid, "since %q: want a date (2026-11-22), an RFC 3339 time, or an age (7d, 12h)", s)
}

// CheckWindow refuses a time window that cannot hold anything: an until
// at or before the since (most often the two flags swapped).
func CheckWindow(cmd string, since, until time.Time) error {
	if since.IsZero() || until.IsZero() || until.After(since) {
		return nil
	}
	e := fault.New(vault.ErrInvalid, "%s: --until %s is not after --since %s", cmd,
		until.Format(time.RFC3339), since.Format(time.RFC3339))
	return e.WithHint("the window is [since, until): events at or after --since and before --until")
}
