package heads

import (
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
)

// TestContinuityRetryNeedsItsProtocol: a deferred refresh of CONTINUITY.md
// is retried by the protocol the caller passes, never skipped: without
// one the refresh fails and the retry stays pending; with one, the
// protocol is called inside the refresh's transaction with the trigger.
func TestContinuityRetryNeedsItsProtocol(t *testing.T) {
	v := testvault.New(t)
	if _, err := v.Update(vault.TxOptions{Command: "test"}, func(tx *vault.Tx) error {
		holder := &HeadLease{Head: vault.ContinuityHead, Agent: "other", Token: "t1"}
		DeferHead(tx, vault.MustRel(vault.ContinuityHead), "", "continuity", "session-end", holder, HeadBook{})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_, err := RunDeferred(v, vault.TxOptions{Command: "hook"}, nil)
	if err == nil || !strings.Contains(err.Error(), "RefreshOptions.Protocol") {
		t.Fatalf("a retry of CONTINUITY.md without its protocol: %v", err)
	}
	var got []string
	protocol := func(pv *vault.Vault, tx *vault.Tx, trigger string) (*HeadOutcome, error) {
		got = append(got, trigger)
		return &HeadOutcome{Head: vault.ContinuityHead, Status: "unchanged"}, nil
	}
	rep, err := RunDeferred(v, vault.TxOptions{Command: "hook"}, protocol)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "retry" {
		t.Fatalf("the protocol was called with %q, want one retry", got)
	}
	found := false
	for _, h := range rep.Heads {
		found = found || h.Head == vault.ContinuityHead
	}
	if !found {
		t.Fatalf("the report leaves CONTINUITY.md out: %+v", rep.Heads)
	}
}
