package vault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/redact"
	"github.com/memvault/memvault/vault/transcript"
)

// DefaultPartBytes is the size past which a transcript part is closed and
// the session continues in the next part (<session>.<n>.jsonl). As with
// ledger segments, each commit stores the whole current part as a new blob.
const DefaultPartBytes = 256 << 10

// TranscriptRel is the path of part n of t (transcript.Ref.Part) as the
// vault's typed path, for the transaction's writes and commits.
func TranscriptRel(t transcript.Ref, n int) RelPath { return RelPath{t.Part(n)} }

// AppendMessages queues messages for the transcript t, numbering them after
// the ones already stored (and any queued earlier in this transaction), and
// returns the first and last sequence numbers. Messages are redacted by the
// caller (the importers do it; AppendText does it for typed text).
func (tx *Tx) AppendMessages(t transcript.Ref, msgs []transcript.Message) (from, to int, err error) {
	if err := t.Check(); err != nil {
		return 0, 0, err
	}
	if len(msgs) == 0 {
		return 0, 0, nil
	}
	if tx.transcripts == nil {
		tx.transcripts = map[transcript.Ref]*transcript.End{}
	}
	tail, ok := tx.transcripts[t]
	if !ok {
		tt, err := transcript.EndOf(tx.v.Files(), t)
		if err != nil {
			return 0, 0, err
		}
		tail = &tt
		tx.transcripts[t] = tail
	}
	limit := tx.v.Config.Transcripts.PartBytes
	from = tail.Last + 1
	for _, m := range msgs {
		tail.Last++
		line, err := transcript.EncodeLine(transcript.Stored{N: tail.Last, Message: m})
		if err != nil {
			return 0, 0, fmt.Errorf("transcript: encode message %s: %w", m.ID, err)
		}
		size := tail.Size + int64(tx.pendingAppend(TranscriptRel(t, tail.Part)))
		if size > 0 && size+int64(len(line)) > limit {
			tail.Part++
			tail.Size = 0
		}
		tx.AppendFile(TranscriptRel(t, tail.Part), line)
	}
	tx.Carry(t)
	return from, tail.Last, nil
}

// AppendText records typed messages (from `transcript append` or a hook) in
// the transcript t, redacting secrets first (prepareText). When something
// was redacted, a transcript.redacted event records how many secrets of
// each kind, never the secrets.
func (tx *Tx) AppendText(t transcript.Ref, msgs []transcript.Message) (from, to int, err error) {
	total, err := tx.v.prepareText(tx.now, msgs)
	if err != nil {
		return 0, 0, err
	}
	from, to, err = tx.AppendMessages(t, msgs)
	if err != nil {
		return 0, 0, err
	}
	// A transaction without a commit (the prompt flow of a hook) may not
	// append events, and refusing the event would lose the prompt: there the
	// [REDACTED:<kind>] markers in the stored text are the whole record.
	if len(total) > 0 && !tx.opts.NoCommit {
		data, _ := json.Marshal(map[string]any{"via": "append", "from": from, "to": to, "redacted": total})
		tx.Append(&Event{Kind: "transcript.redacted", Text: fmt.Sprintf("redacted secrets in messages %d-%d", from, to),
			Data: data, Source: "append"})
	}
	return from, to, nil
}

// prepareText makes typed messages what a transcript stores, in place:
// checked, each without an id given a fresh m_ id, without a time given
// now, without a speaker its role, its text redacted. It returns how many
// secrets of each kind were redacted. The spool (spool.go) stores messages
// prepared the same way, so that a message folded in later is the one the
// transaction would have stored.
func (v *Vault) prepareText(now time.Time, msgs []transcript.Message) (map[string]int, error) {
	total := map[string]int{}
	for i := range msgs {
		m := &msgs[i]
		if !m.Role.Valid() {
			e := fault.New(ErrInvalid, "role %q: unknown", m.Role)
			return nil, e.WithHint("use one of: user, assistant, tool, system")
		}
		if err := CheckText("text", m.Text, false); err != nil {
			return nil, err
		}
		if m.ID == "" {
			m.ID = NewID("m_", now)
		}
		if m.TS.IsZero() {
			m.TS = now.UTC()
		}
		if m.Speaker == "" {
			m.Speaker = string(m.Role)
		}
		// The speaker is text too: a name typed by a person may be
		// anything.
		for _, f := range []*string{&m.Text, &m.Speaker} {
			var counts map[string]int
			*f, counts = v.Redact(*f)
			for k, n := range counts {
				total[k] += n
			}
		}
		if m.Source.Format == "" {
			m.Source.Format = "memvault"
		}
	}
	return total, nil
}

// Redact applies the vault's redaction rules to text and returns the
// redacted text and the count of secrets replaced per kind.
func (v *Vault) Redact(text string) (string, map[string]int) {
	if v.Rules == nil {
		return text, nil
	}
	return redact.Text(text, v.Rules)
}

// Queued returns the messages of t this transaction has queued so far (the
// spool's fold, which runs before a transaction's own work), in order:
// they follow the transcript's end on disk, tail.
func (tx *Tx) Queued(t transcript.Ref, tail transcript.End) []transcript.Stored {
	tt := tx.transcripts[t]
	if tt == nil {
		return nil
	}
	var out []transcript.Stored
	for n := tail.Part; n <= tt.Part; n++ {
		rel := TranscriptRel(t, n)
		for _, a := range tx.appends {
			if a.rel != rel {
				continue
			}
			for _, line := range bytes.SplitAfter(a.data, []byte("\n")) {
				if m, err := transcript.DecodeLine(line); err == nil {
					out = append(out, m)
				}
			}
		}
	}
	return out
}
