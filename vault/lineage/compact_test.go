package lineage

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/testvault"

	"github.com/memvault/memvault/vault/transcript"
)

// compactSession stores msgs as session s's transcript (before runs in
// that transaction), with a compaction summary last, then records the
// compaction with opts.
// It returns the node and the thread of its node.created event.
func compactSession(t *testing.T, v *vault.Vault, s string, opts CompactOptions, before func(tx *vault.Tx), msgs ...transcript.Message) (*node.Node, string, error) {
	t.Helper()
	ref := transcript.Ref{Agent: v.Config.Agent, Session: s}
	msgs = append(msgs, transcript.Message{Role: transcript.RoleSystem, Kind: transcript.KindCompaction, Text: "the summary of " + s})
	_, err := v.Update(vault.TxOptions{Session: s}, func(tx *vault.Tx) error {
		if before != nil {
			before(tx)
		}
		_, _, err := tx.AppendText(ref, msgs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var made *node.Node
	_, err = v.Update(vault.TxOptions{Session: s}, func(tx *vault.Tx) error {
		n, _, err := Compact(tx, ref, opts)
		made = n
		return err
	})
	if err != nil {
		return nil, "", err
	}
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Rows {
		if r.Kind == "node.created" && len(r.Links) > 0 && r.Links[0] == made.ID {
			return made, r.Thread, nil
		}
	}
	t.Fatalf("no node.created for %s", made.ID)
	return nil, "", nil
}

func assistant(text string) transcript.Message {
	return transcript.Message{Role: transcript.RoleAssistant, Text: text}
}

// A compaction node belongs to the session's thread: the one its last
// THREAD: line names, else the one given (the hook's), else the threads of
// the session's rows; the node.created event carries it, which is what
// puts the node in that thread head's Lineage and keeps it out of other
// threads' recall.
func TestCompactThread(t *testing.T) {
	v := testvault.New(t)
	cases := []struct {
		name   string
		opts   CompactOptions
		before func(tx *vault.Tx)
		msgs   []transcript.Message
		want   []string
	}{
		{name: "given", opts: CompactOptions{Thread: "project:shop"},
			msgs: []transcript.Message{assistant("DECISION: copy before switching reads")},
			want: []string{"project:shop"}},
		{name: "thread line wins", opts: CompactOptions{Thread: "project:shop"},
			msgs: []transcript.Message{assistant("THREAD: topic:billing\nDECISION: x"), assistant("THREAD: not a key\nok")},
			want: []string{"topic:billing"}},
		{name: "session rows", before: func(tx *vault.Tx) {
			tx.Append(&vault.Event{Kind: "session.started", Thread: "person:alice", Text: "started"})
		}, msgs: []transcript.Message{assistant("hello")}, want: []string{"person:alice"}},
		{name: "none", msgs: []transcript.Message{assistant("hello")}, want: []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, evThread, err := compactSession(t, v, "s-"+strings.ReplaceAll(c.name, " ", "-"), c.opts, c.before, c.msgs...)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(n.Threads, c.want) {
				t.Errorf("node threads = %q, want %q", n.Threads, c.want)
			}
			wantEv := ""
			if len(c.want) > 0 {
				wantEv = c.want[0]
			}
			if evThread != wantEv {
				t.Errorf("node.created thread = %q, want %q", evThread, wantEv)
			}
			data, err := os.ReadFile(v.Abs(vault.MustRel(n.Path)))
			if err != nil {
				t.Fatal(err)
			}
			if wantLine := "threads: [" + quoteAll(c.want) + "]\n"; !strings.Contains(string(data), wantLine) {
				t.Errorf("node file lacks %q:\n%s", wantLine, data)
			}
		})
	}
	testvault.MustVerify(t, v)
}

func quoteAll(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = `"` + k + `"`
	}
	return strings.Join(q, ",")
}

func TestCompactBadThread(t *testing.T) {
	v := testvault.New(t)
	_, _, err := compactSession(t, v, "s1", CompactOptions{Thread: "no colon"}, nil, assistant("hello"))
	if !errors.Is(err, vault.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}
