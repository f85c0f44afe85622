package vault

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memvault/memvault/hooks/transcript"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/redact"
)

// importChunk bounds how much of a source file one transaction imports, so
// a 100 MB transcript is streamed in bounded memory, a few commits at a time.
const importChunk = 8 << 20

// importCursor is what .state/imports/ remembers per source file: where the
// last import stopped.
type importCursor struct {
	Source string            `json:"source"`
	Format transcript.Format `json:"format"`
	Agent  string            `json:"agent"`
	Sess   string            `json:"session"`
	transcript.Cursor
	// Unrecorded is what imports without a commit (a hook's turn) added
	// since the last transcript.imported event of this source: the next
	// import that commits, or Tx.RecordImport, records it.
	Unrecorded *importRecord `json:"unrecorded,omitempty"`
}

// importRecord is what a transcript.imported event says: the messages
// added and what the parser did with the lines it read.
type importRecord struct {
	From     int              `json:"from"`
	To       int              `json:"to"`
	Messages int              `json:"messages"`
	Stats    transcript.Stats `json:"stats"`
}

// add extends the record by messages from..to and the stats of their lines.
func (r *importRecord) add(from, to, messages int, stats transcript.Stats) {
	if r.From == 0 {
		r.From = from
	}
	r.To = to
	r.Messages += messages
	mergeStats(&r.Stats, stats)
}

// importEvent is the transcript.imported event of rec.
func importEvent(format transcript.Format, source string, rec importRecord) *Event {
	data, _ := json.Marshal(map[string]any{
		"via": "import", "format": format, "source": source, "from": rec.From, "to": rec.To,
		"messages": rec.Messages, "skipped": rec.Stats.Skipped, "unknown": rec.Stats.Unknown,
		"invalid": rec.Stats.Invalid, "redacted": rec.Stats.Redacted,
	})
	return &Event{Kind: "transcript.imported", Text: fmt.Sprintf("imported %d messages from %s", rec.Messages, filepath.Base(source)),
		Data: data, Source: "import"}
}

func readCursor(fsys fileio.Root, path string) importCursor {
	var cur importCursor
	if data, err := fsys.ReadFile(path); err == nil {
		_ = json.Unmarshal(data, &cur)
	}
	return cur
}

func writeCursor(fsys fileio.Root, path string, cur importCursor) {
	if data, err := json.Marshal(cur); err == nil {
		_ = fsys.WriteAtomic(path, data) // a cache: losing it costs a dedupe pass
	}
}

func (v *Vault) cursorPath(t TranscriptRef, format transcript.Format, source string) string {
	sum := sha256.Sum256([]byte(t.Agent + "\x00" + t.Session + "\x00" + string(format) + "\x00" + source))
	return filepath.Join(v.Root, ".state", "imports", hex.EncodeToString(sum[:12])+".json")
}

// ImportReport says what an import did.
type ImportReport struct {
	Agent      string           `json:"agent"`
	Session    string           `json:"session"`
	Source     string           `json:"source"`
	Format     string           `json:"format"`
	Added      int              `json:"added"`
	Duplicates int              `json:"duplicates,omitempty"`
	From       int              `json:"from,omitempty"`
	To         int              `json:"to,omitempty"`
	Stats      transcript.Stats `json:"stats"`
	Commits    []string         `json:"commits,omitempty"`
}

// Import reads the new part of a harness transcript into the vault
// transcript of t. It remembers where it stopped (per agent, session, format
// and source path) and, when it starts from the beginning of a file into a
// transcript that already has messages, skips messages whose id is already
// stored, so importing the same file again, or a longer version of it, adds
// only what is new, even without the remembered offset (a fresh clone).
//
// With opts.NoCommit (a hook's turn, DESIGN §3) the messages are durable on
// disk and nothing is committed; the transcript.imported event, which would
// need a commit, waits for the next import of the source that commits or
// for Tx.RecordImport, and thread must be empty.
func (v *Vault) Import(opts TxOptions, t TranscriptRef, format transcript.Format, source, thread string) (*ImportReport, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if thread != "" {
		if opts.NoCommit {
			return nil, fault.New(ErrInvalid, "import: a thread is bound by a commit")
		}
		if _, err := ParseThread(thread); err != nil {
			return nil, err
		}
	}
	abs, err := filepath.Abs(source)
	if err != nil {
		return nil, fault.IO("import "+source, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		e := fault.IO("import "+source, err).(*Error)
		if os.IsNotExist(err) {
			e.Class = ErrNotFound
		}
		return nil, e
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fault.IO("import "+source, err)
	}
	if info.IsDir() {
		return nil, fault.New(ErrInvalid, "import %s: is a folder", source)
	}
	size := info.Size()

	rep := &ImportReport{Agent: t.Agent, Session: t.Session, Source: source, Format: string(format)}
	cpath := v.cursorPath(t, format, abs)
	cur := readCursor(v.files(), cpath)
	if cur.Offset > size {
		cur.Cursor = transcript.Cursor{} // the file was replaced or truncated: start over, dedupe by id
	}
	var known map[string]bool
	if cur.Offset == 0 {
		if known, err = v.messageIDs(t); err != nil {
			return nil, err
		}
	}
	hookPrompts, err := v.hookPrompts(t)
	if err != nil {
		return nil, err
	}
	popts := transcript.Options{Rules: v.rules, NoRedact: v.rules == nil}
	opts.Session = t.Session
	if opts.Agent == "" {
		opts.Agent = t.Agent
	}
	if opts.Command == "" {
		opts.Command = "transcript import"
	}
	chunk := int64(importChunk)
	first := true
	for cur.Offset < size {
		end := min(size, cur.Offset+chunk)
		res, err := transcript.Parse(format, f, end, cur.Cursor, popts)
		if errors.Is(err, transcript.ErrMidLine) || errors.Is(err, transcript.ErrShrunk) {
			cur.Cursor = transcript.Cursor{}
			if known, err = v.messageIDs(t); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", source, err)
		}
		if res.Next.Offset == cur.Offset {
			if end == size {
				break // only a torn last line is left: the harness is still writing it
			}
			chunk *= 2 // one line longer than the chunk
			continue
		}
		if first && cur.Offset == 0 && len(res.Messages) == 0 && res.Stats.Lines > 0 &&
			(res.Stats.Invalid > 0 || len(res.Stats.Unknown) > 0) {
			return nil, wrongFormat(f, source, format)
		}
		first = false
		mergeStats(&rep.Stats, res.Stats)
		msgs := res.Messages[:0:0]
		for _, m := range res.Messages {
			if known[m.ID] {
				rep.Duplicates++
				continue
			}
			// A prompt the prompt-submit hook stored already is the same
			// message under another id: keep the first.
			if m.Role == transcript.RoleUser && hookPrompts[m.Text] > 0 {
				hookPrompts[m.Text]--
				rep.Duplicates++
				continue
			}
			msgs = append(msgs, m)
		}
		next := cur
		next.Cursor = res.Next
		if len(msgs) > 0 {
			var from, to int
			var rec importRecord
			if cur.Unrecorded != nil {
				rec = *cur.Unrecorded
			}
			result, err := v.Update(opts, func(tx *Tx) error {
				var err error
				from, to, err = tx.AppendMessages(t, msgs)
				if err != nil {
					return err
				}
				rec.add(from, to, len(msgs), res.Stats)
				if opts.NoCommit {
					return nil
				}
				if thread != "" {
					if err := tx.BindSession(t, thread); err != nil {
						return err
					}
				}
				tx.Append(importEvent(format, source, rec))
				tx.Subject(fmt.Sprintf("transcript: import of %d messages (%s)", len(msgs), format))
				return nil
			})
			if err != nil {
				return nil, err
			}
			next.Unrecorded = nil
			if opts.NoCommit {
				next.Unrecorded = &rec
			}
			if rep.From == 0 {
				rep.From = from
			}
			rep.To = to
			rep.Added += len(msgs)
			if result.Commit != "" {
				rep.Commits = append(rep.Commits, result.Commit)
			}
		}
		cur = next
		cur.Source, cur.Format, cur.Agent, cur.Sess = abs, format, t.Agent, t.Session
		writeCursor(v.files(), cpath, cur)
	}
	return rep, nil
}

// RecordImport records the transcript.imported event of what imports of
// source into t without a commit (a hook's turns) added since the last
// such event, so that the transaction committing the session's transcript
// also says how it came in. It records nothing when there is nothing new.
// The record is cleared once the commit has landed; a crash in between
// records the span again with the next commit, the messages stay stored
// once.
func (tx *Tx) RecordImport(t TranscriptRef, format transcript.Format, source string) error {
	abs, err := filepath.Abs(source)
	if err != nil {
		return fault.IO("import "+source, err)
	}
	cpath := tx.v.cursorPath(t, format, abs)
	cur := readCursor(tx.v.files(), cpath)
	if cur.Unrecorded == nil || cur.Unrecorded.Messages == 0 {
		return nil
	}
	tx.Append(importEvent(format, source, *cur.Unrecorded))
	tx.committed = append(tx.committed, func() {
		cur := readCursor(tx.v.files(), cpath)
		cur.Unrecorded = nil
		writeCursor(tx.v.files(), cpath, cur)
	})
	return nil
}

func mergeStats(dst *transcript.Stats, s transcript.Stats) {
	dst.Lines += s.Lines
	dst.Messages += s.Messages
	dst.Invalid += s.Invalid
	for _, pair := range []struct {
		d *map[string]int
		s map[string]int
	}{
		{&dst.Skipped, s.Skipped}, {&dst.Unknown, s.Unknown}, {&dst.Redacted, s.Redacted},
	} {
		for k, n := range pair.s {
			if *pair.d == nil {
				*pair.d = map[string]int{}
			}
			(*pair.d)[k] += n
		}
	}
}

// wrongFormat names the first line that shows the file is not in the format
// asked for: not JSON at all, or JSON of record types the importer does not
// know.
func wrongFormat(f *os.File, source string, format transcript.Format) error {
	r := bufio.NewReader(io.NewSectionReader(f, 0, 1<<20))
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		trimmed := strings.TrimSpace(string(line))
		if trimmed != "" {
			why := "a json record of a type this format does not have"
			var obj map[string]json.RawMessage
			if json.Unmarshal([]byte(trimmed), &obj) != nil {
				why = "not a json object"
			}
			e := fault.New(ErrInvalid, "import %s:%d: not a %s transcript: %s", source, n, format, why)
			return e.WithHint("check --format (one of %s)", formatList())
		}
		if err != nil {
			return fault.New(ErrInvalid, "import %s: not a %s transcript", source, format)
		}
	}
}

func formatList() string {
	var names []string
	for _, f := range transcript.Formats() {
		names = append(names, string(f))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// HookFormat marks messages a hook stored from the harness's payload rather
// than from its transcript file.
const HookFormat = "hook"

// hookPrompts counts, by text, the user prompts of t that a hook stored and
// no import has matched yet, those still in the spool included (read
// first: see spooled).
func (v *Vault) hookPrompts(t TranscriptRef) (map[string]int, error) {
	spooled := v.spooled(t)
	counts := map[string]int{}
	stored := map[string]bool{}
	err := v.ReadTranscript(t, 1, 0, func(m StoredMessage) error {
		stored[m.ID] = true
		if m.Role == transcript.RoleUser {
			if m.Source.Format == HookFormat {
				counts[m.Text]++
			} else if counts[m.Text] > 0 {
				counts[m.Text]-- // already matched by an earlier import
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	for _, m := range spooled {
		if m.Role == transcript.RoleUser && m.Source.Format == HookFormat && !stored[m.ID] {
			counts[m.Text]++
		}
	}
	return counts, nil
}

// messageIDs returns the ids of the messages stored for t.
func (v *Vault) messageIDs(t TranscriptRef) (map[string]bool, error) {
	ids := map[string]bool{}
	err := v.ReadTranscript(t, 1, 0, func(m StoredMessage) error {
		ids[m.ID] = true
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return ids, nil
	}
	return ids, err
}

// Redact applies the vault's redaction rules to text and returns the
// redacted text and the count of secrets replaced per kind.
func (v *Vault) Redact(text string) (string, map[string]int) {
	if v.rules == nil {
		return text, nil
	}
	return redact.Text(text, v.rules)
}
