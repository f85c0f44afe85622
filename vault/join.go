package vault

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/fault"
)

// Joining lines of history. A merge of two clones' ledgers leaves one open
// tip per clone (verify.go, chainChecker); the next transaction that
// appends events first appends a ledger.merged event naming them all
// (Tx.seal), made from the tips alone so that clones joining the same tips
// write the same line.

// Join joins the ledger's open tips, left by a merge of two clones' ledgers,
// with a ledger.merged event in a commit of its own; it does nothing when
// there is one tip. Any transaction that appends events joins them first
// anyway; sync calls Join so that what it pushes has one tip.
func (v *Vault) Join() (*Result, error) {
	return v.Update(TxOptions{Command: "join"}, func(tx *Tx) error {
		tx.join = true
		tx.Subject("ledger: join the lines of history a merge brought together")
		return nil
	})
}

// joinEvent is the event that joins tips. It is made from the tips alone,
// so two clones that join the same lines of history write the same line:
// its id derives from the sorted tips, its time is the latest tip's, and
// it names the vault's own agent.
func (v *Vault) joinEvent(tips []string) (*Event, error) {
	latest, err := v.latestOf(tips)
	if err != nil {
		return nil, err
	}
	return NewJoin(v.Config.Agent, tips, latest), nil
}

// NewJoin returns, unsealed, the event agent writes to join tips whose
// latest event was at latest; its Prev is the first tip in sorted order.
// A transaction reads latest off the segments; a repair, whose segments
// are being rewritten, passes the time it found in memory, and gets the
// same line any clone joining those tips writes.
func NewJoin(agent string, tips []string, latest time.Time) *Event {
	sorted := slices.Clone(tips)
	slices.Sort(sorted)
	latest = latest.UTC().Truncate(time.Millisecond)
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	data, _ := json.Marshal(map[string]any{"tips": sorted})
	return &Event{
		ID:     derivedID("e_", latest, sum[:]),
		TS:     FormatTS(latest),
		Agent:  agent,
		Kind:   KindJoin,
		Text:   fmt.Sprintf("joined %d lines of history after a merge", len(sorted)),
		Data:   data,
		Source: "merge",
		Prev:   sorted[0],
	}
}

// latestOf returns the latest timestamp among the events with the given
// hashes, reading segments from the last backwards until it found them all
// (open tips are near the end).
func (v *Vault) latestOf(hashes []string) (time.Time, error) {
	segs, _, err := ListSegments(v.Root)
	if err != nil {
		return time.Time{}, err
	}
	want := make(map[string]bool, len(hashes))
	for _, h := range hashes {
		want[h] = true
	}
	var latest time.Time
	for i := len(segs) - 1; i >= 0 && len(want) > 0; i-- {
		lines, _, err := readSegment(v.Root, segs[i])
		if err != nil {
			return time.Time{}, err
		}
		for _, ll := range lines {
			if ll.Event == nil || !want[ll.Event.Hash] {
				continue
			}
			delete(want, ll.Event.Hash)
			if t := ll.Event.Time(); t.After(latest) {
				latest = t
			}
		}
	}
	if len(want) > 0 {
		return time.Time{}, fault.New(ErrCorrupt, "ledger: an open tip is not in the ledger")
	}
	return latest, nil
}
