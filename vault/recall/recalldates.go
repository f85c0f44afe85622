package recall

// Dates in a recall query: "on 15 March", "in April", "yesterday", "last
// week", "on Tuesday". Each is resolved, against a reference time, to the
// days it covers; messages written on those days are lifted (never found
// on the date alone). Only forms that resolve one way are read: a bare
// number or "recently" is not a date.

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// maxQueryDays bounds the days a query lifts: a month at most.
const maxQueryDays = 31

var monthNames = map[string]time.Month{
	"january": time.January, "jan": time.January, "february": time.February, "feb": time.February,
	"march": time.March, "mar": time.March, "april": time.April, "apr": time.April, "may": time.May,
	"june": time.June, "jun": time.June, "july": time.July, "jul": time.July, "august": time.August,
	"aug": time.August, "september": time.September, "sep": time.September, "sept": time.September,
	"october": time.October, "oct": time.October, "november": time.November, "nov": time.November,
	"december": time.December, "dec": time.December,
}

var weekdayNames = map[string]time.Weekday{
	"monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday, "thursday": time.Thursday,
	"friday": time.Friday, "saturday": time.Saturday, "sunday": time.Sunday,
}

// queryDays returns the days (2006-01-02, UTC) the query asks about,
// resolved against now (the current time when zero). A month or day
// without a year is the latest one not after now.
func queryDays(q string, now time.Time) []string {
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-'
	})
	var days []time.Time
	span := func(from time.Time, n int) {
		for i := 0; i < n && len(days) < maxQueryDays; i++ {
			days = append(days, from.AddDate(0, 0, i))
		}
	}
	latest := func(m time.Month, d int) time.Time {
		t := time.Date(today.Year(), m, d, 0, 0, 0, 0, time.UTC)
		if t.After(today) {
			t = t.AddDate(-1, 0, 0)
		}
		return t
	}
	dayNumber := func(w string) int {
		w = strings.TrimRight(w, "stndrh")
		n, err := strconv.Atoi(w)
		if err != nil || n < 1 || n > 31 {
			return 0
		}
		return n
	}
	for i, w := range words {
		prev, next := "", ""
		if i > 0 {
			prev = words[i-1]
		}
		if i+1 < len(words) {
			next = words[i+1]
		}
		if t, err := time.Parse(time.DateOnly, w); err == nil {
			span(t, 1)
			continue
		}
		switch w {
		case "today":
			span(today, 1)
			continue
		case "yesterday":
			span(today.AddDate(0, 0, -1), 1)
			continue
		case "week":
			if prev == "last" {
				// The week before this one, Monday to Sunday.
				monday := today.AddDate(0, 0, -((int(today.Weekday())+6)%7)-7)
				span(monday, 7)
			}
			continue
		}
		if wd, ok := weekdayNames[w]; ok {
			// The latest such day before today; "last Tuesday" is the same.
			back := (int(today.Weekday()) - int(wd) + 7) % 7
			if back == 0 {
				back = 7
			}
			span(today.AddDate(0, 0, -back), 1)
			continue
		}
		m, ok := monthNames[w]
		if !ok || len(w) == 3 && w == "may" && prev != "in" && dayNumber(prev) == 0 && dayNumber(next) == 0 {
			continue // "may" alone is a verb
		}
		switch {
		case dayNumber(prev) > 0:
			span(latest(m, dayNumber(prev)), 1) // 15 March
		case dayNumber(next) > 0:
			span(latest(m, dayNumber(next)), 1) // March 15
		case prev == "in" || prev == "during" || prev == "of":
			first := latest(m, 1)
			span(first, int(first.AddDate(0, 1, 0).Sub(first).Hours()/24))
		}
	}
	out := make([]string, 0, len(days))
	for _, d := range days {
		s := d.Format(time.DateOnly)
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
