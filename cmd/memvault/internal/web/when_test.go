package web

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

// TestTimesAndSessions: the timeline shows when a row was written as how
// long ago, with the exact time in the <time>'s title and datetime, and a
// UUID session shortened, whole in the link's title and href.
func TestTimesAndSessions(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	const uuid = "3f2b8c1e-9d4a-4e6b-8f1a-2c3d4e5f6a7b"
	_, err := v.Update(vault.TxOptions{Session: uuid}, func(tx *vault.Tx) error {
		_, err := memory.Remember(tx, memory.Input{Text: "the queue is Postgres"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	body := serve(t, v, false).page("/timeline", "timeline")
	if !regexp.MustCompile(`<td class="when"><time datetime="20[0-9-]+T[0-9:.]+Z" title="20[0-9-]+ [0-9:.]+ UTC">just now</time></td>`).MatchString(body) {
		t.Errorf("the timeline's time is not relative with the exact time on hover:\n%s", body)
	}
	if !strings.Contains(body, `title="`+uuid+`">3f2b8c1e…</a>`) || !strings.Contains(body, `/`+uuid+`"`) {
		t.Errorf("the session is not shortened with the whole id on hover:\n%s", body)
	}
	now := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{10 * time.Second: "just now", 5 * time.Minute: "5 min ago",
		3 * time.Hour: "3 h ago", 30 * time.Hour: "yesterday 06:00", 72 * time.Hour: "3 days ago", 30 * 24 * time.Hour: "2026-04-10"} {
		if got := ago(now.Add(-d), now); got != want {
			t.Errorf("ago(%v) = %q, want %q", d, got, want)
		}
	}
	if got := when("not a time <b>", now); got != "not a time &lt;b&gt;" {
		t.Errorf("when of text: %q", got)
	}
}
