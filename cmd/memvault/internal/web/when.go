package web

import (
	"html/template"
	"strconv"
	"time"
)

// A time is shown as how long ago it was ("3 min ago", "yesterday",
// "2026-03-04" past a week), in a <time> whose datetime and title hold
// the exact time: the title shows on hover. The stylesheet keeps a time on
// one line. now is the request's, so a page is consistent within itself;
// the live updates (static/live.js) bring the page, and its times, anew.

// when renders t, a time.Time or a ledger timestamp (RFC 3339); any other
// text is shown as it is.
func when(t any, now time.Time) template.HTML {
	var at time.Time
	switch t := t.(type) {
	case time.Time:
		at = t
	case string:
		p, err := time.Parse(time.RFC3339Nano, t)
		if err != nil {
			if p, err = time.Parse(time.DateOnly, t); err != nil {
				return template.HTML(template.HTMLEscapeString(t))
			}
		}
		at = p
	}
	if at.IsZero() {
		return ""
	}
	exact := at.UTC().Format("2006-01-02 15:04:05.000 UTC")
	return template.HTML(`<time datetime="` + at.UTC().Format(time.RFC3339Nano) + `" title="` + exact + `">` +
		template.HTMLEscapeString(ago(at, now)) + `</time>`)
}

// ago is how long before now at was, in words.
func ago(at, now time.Time) string {
	d := now.Sub(at)
	switch {
	case d < -time.Minute:
		return at.UTC().Format("2006-01-02 15:04")
	case d < 45*time.Second:
		return "just now"
	case d < time.Hour:
		return strconv.Itoa(int(d.Round(time.Minute)/time.Minute)) + " min ago"
	case d < 24*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h ago"
	case d < 48*time.Hour:
		return "yesterday " + at.UTC().Format("15:04")
	case d < 7*24*time.Hour:
		return strconv.Itoa(int(d/(24*time.Hour))) + " days ago"
	}
	return at.UTC().Format("2006-01-02")
}

// shortSession is a session id a column can hold: its first 8
// characters and an ellipsis when it is longer than 12 (a UUID); the page
// puts the whole id in the title.
func shortSession(s string) string {
	if len(s) > 12 {
		return s[:8] + "…"
	}
	return s
}
