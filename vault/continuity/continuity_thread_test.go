package continuity

import (
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
)

// The protocol's verbs file new rows under the transaction's thread; an
// event about an earlier row keeps that row's thread, a global one too.
func TestContinuityThread(t *testing.T) {
	v := testvault.New(t)
	update := func(thread string, fn func(ct *ContinuityTx) error) []*vault.Event {
		t.Helper()
		res, err := UpdateContinuity(v, ContinuityOptions{Thread: thread}, fn)
		if err != nil {
			t.Fatal(err)
		}
		return res.Events
	}
	threads := func(evs []*vault.Event) string {
		var out []string
		for _, ev := range evs {
			if !strings.HasPrefix(ev.Kind, "head.") { // the refresh of CONTINUITY.md
				out = append(out, ev.Kind+"="+ev.Thread)
			}
		}
		return strings.Join(out, " ")
	}
	evs := update("", func(ct *ContinuityTx) error { return ct.Next("a global step", false) })
	global := evs[0].ID
	evs = update("project:shop", func(ct *ContinuityTx) error {
		if err := ct.Next("a shop step", false); err != nil {
			return err
		}
		if _, err := ct.Decide(DecideInput{Decision: "retry 5 times"}); err != nil {
			return err
		}
		return ct.Done("something else")
	})
	if got := threads(evs); got != "next=project:shop decision=project:shop done=project:shop" {
		t.Fatalf("new rows: %s", got)
	}
	decision := evs[1].ID
	evs = update("project:other", func(ct *ContinuityTx) error {
		if err := ct.Done(global); err != nil {
			return err
		}
		_, err := ct.Decide(DecideInput{Decision: "retry 3 times", Supersedes: decision})
		return err
	})
	if got := threads(evs); got != "done= supersede=project:shop" {
		t.Fatalf("rows about rows: %s", got)
	}
	if _, err := UpdateContinuity(v, ContinuityOptions{Thread: "Not A Thread"}, func(ct *ContinuityTx) error {
		return ct.Next("never", false)
	}); err == nil {
		t.Fatal("a malformed thread was taken")
	}
}
