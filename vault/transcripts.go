package vault

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/redact"
	"github.com/memvault/memvault/vault/transcript"
)

// DefaultPartBytes is the size past which a transcript part is closed and
// the session continues in the next part (<session>.<n>.jsonl). As with
// ledger segments, each commit stores the whole current part as a new blob.
const DefaultPartBytes = 256 << 10

// maxSessionLen bounds a session key before encoding.
const maxSessionLen = 256

// CheckSession validates a session key. Session keys come from harnesses
// and may hold any printable text; they reach the file system only through
// sessionFileName, which encodes them, so only what would break a commit
// trailer or a terminal is refused.
func CheckSession(s string) error {
	switch {
	case s == "":
		return fault.New(ErrInvalid, "session: empty")
	case len(s) > maxSessionLen:
		return fault.New(ErrInvalid, "session: longer than %d bytes", maxSessionLen)
	case !utf8.ValidString(s):
		return fault.New(ErrInvalid, "session: not valid utf-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fault.New(ErrInvalid, "session %q: contains a control character", s)
		}
	}
	return nil
}

// sessionFileName encodes a session key as a file name: ASCII letters,
// digits, '-' and '_' stay, every other byte becomes %XX. The result has no
// dot, no separator and cannot start with a dot, so "<name>.<n>.jsonl" parts
// are unambiguous and no key can escape its folder. Very long encodings are
// cut and suffixed with a hash of the key so they stay unique.
func sessionFileName(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	name := b.String()
	if len(name) > 180 {
		sum := sha256.Sum256([]byte(key))
		name = name[:160] + "~" + hex.EncodeToString(sum[:8])
	}
	return name
}

// DecodeSessionFileName reverses sessionFileName for names that were not
// cut; cut names decode to themselves (the key is in each message anyway).
func DecodeSessionFileName(name string) string {
	if strings.Contains(name, "~") {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] == '%' && i+2 < len(name) {
			if v, err := strconv.ParseUint(name[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(name[i])
	}
	return b.String()
}

// TranscriptRef names one transcript: agent plus session key. The pair, not
// the session key alone, is the identity: two agents may use the same key.
type TranscriptRef struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
}

func (t TranscriptRef) Check() error {
	if err := CheckName("agent", t.Agent); err != nil {
		return err
	}
	return CheckSession(t.Session)
}

// Part is the path of part n (0 is the first, unnumbered file).
func (t TranscriptRef) Part(n int) RelPath {
	name := sessionFileName(t.Session)
	if n > 0 {
		name += "." + strconv.Itoa(n)
	}
	return RelPath{"transcripts/" + t.Agent + "/" + name + ".jsonl"}
}

// Path is the transcript's first part, the name nodes cite in their span.
func (t TranscriptRef) Path() string { return t.Part(0).String() }

// parts lists the transcript's part numbers in order. Parts are numbered
// without gaps, so this stats <session>.jsonl, <session>.1.jsonl, … until
// one is missing, instead of listing a folder that holds every session of
// the agent.
func (v *Vault) parts(t TranscriptRef) ([]int, error) {
	var parts []int
	for n := 0; ; n++ {
		_, err := v.Files().Stat(v.Abs(t.Part(n)))
		if errors.Is(err, fs.ErrNotExist) {
			return parts, nil
		}
		if err != nil {
			return nil, fault.IO("stat "+t.Part(n).String(), err)
		}
		parts = append(parts, n)
	}
}

// transcriptTail is what an appender needs: the last part, its size, and the
// last sequence number.
type transcriptTail struct {
	Part int
	Size int64
	last int
}

func (v *Vault) TranscriptTail(t TranscriptRef) (transcriptTail, error) {
	parts, err := v.parts(t)
	if err != nil || len(parts) == 0 {
		return transcriptTail{}, err
	}
	tt := transcriptTail{Part: parts[len(parts)-1]}
	for i := len(parts) - 1; i >= 0; i-- {
		size, body, err := v.Files().ReadEnd(v.Abs(t.Part(parts[i])))
		if err != nil {
			return tt, err
		}
		if i == len(parts)-1 {
			tt.Size = size
		}
		if k := bytes.LastIndexByte(body, '\n'); k >= 0 {
			body = body[:k]
			line := body[bytes.LastIndexByte(body, '\n')+1:]
			if m, err := transcript.DecodeLine(line); err == nil {
				tt.last = m.N
				return tt, nil
			}
		}
	}
	return tt, nil
}

// AppendMessages queues messages for the transcript t, numbering them after
// the ones already stored (and any queued earlier in this transaction), and
// returns the first and last sequence numbers. Messages are redacted by the
// caller (the importers do it; AppendText does it for typed text).
func (tx *Tx) AppendMessages(t TranscriptRef, msgs []transcript.Message) (from, to int, err error) {
	if err := t.Check(); err != nil {
		return 0, 0, err
	}
	if len(msgs) == 0 {
		return 0, 0, nil
	}
	if tx.transcripts == nil {
		tx.transcripts = map[TranscriptRef]*transcriptTail{}
	}
	tail, ok := tx.transcripts[t]
	if !ok {
		tt, err := tx.v.TranscriptTail(t)
		if err != nil {
			return 0, 0, err
		}
		tail = &tt
		tx.transcripts[t] = tail
	}
	limit := tx.v.Config.Transcripts.PartBytes
	from = tail.last + 1
	for _, m := range msgs {
		tail.last++
		line, err := transcript.EncodeLine(transcript.Stored{N: tail.last, Message: m})
		if err != nil {
			return 0, 0, fmt.Errorf("transcript: encode message %s: %w", m.ID, err)
		}
		size := tail.Size + int64(tx.pendingAppend(t.Part(tail.Part)))
		if size > 0 && size+int64(len(line)) > limit {
			tail.Part++
			tail.Size = 0
		}
		tx.AppendFile(t.Part(tail.Part), line)
	}
	tx.Carry(t)
	return from, tail.last, nil
}

// ReadTranscript calls fn for each stored message of t with from ≤ N ≤ to
// (to ≤ 0: to the end), reading part by part so memory stays bounded. A torn
// last line is skipped.
func (v *Vault) ReadTranscript(t TranscriptRef, from, to int, fn func(transcript.Stored) error) error {
	if err := t.Check(); err != nil {
		return err
	}
	parts, err := v.parts(t)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		e := fault.New(ErrNotFound, "transcript: agent %s has no transcript for session %q", t.Agent, t.Session)
		return e.WithHint("list transcripts with: memvault sessions")
	}
	for _, p := range parts {
		if err := v.readPart(t, p, from, to, fn); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}

var ErrStop = errors.New("stop")

func (v *Vault) readPart(t TranscriptRef, part, from, to int, fn func(transcript.Stored) error) error {
	f, err := v.Files().Open(v.Abs(t.Part(part)))
	if err != nil {
		return fault.IO("read "+t.Part(part).String(), err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return nil // a torn last line, if any, is not a message yet
		}
		if err != nil {
			return fault.IO("read "+t.Part(part).String(), err)
		}
		m, err := transcript.DecodeLine(line)
		if err != nil {
			continue
		}
		if m.N < from {
			continue
		}
		if to > 0 && m.N > to {
			return ErrStop
		}
		if err := fn(m); err != nil {
			return err
		}
	}
}

// SessionInfo describes one stored transcript for `memvault sessions`.
type SessionInfo struct {
	Agent    string `json:"agent"`
	Session  string `json:"session"`
	Path     string `json:"path"`
	Parts    int    `json:"parts"`
	Messages int    `json:"messages"`
	Bytes    int64  `json:"bytes"`
}

// Sessions lists every transcript in the vault, by agent then session.
func (v *Vault) Sessions() ([]SessionInfo, error) {
	agents, err := v.Files().ReadDir(filepath.Join(v.Root, "transcripts"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fault.IO("read transcripts", err)
	}
	var out []SessionInfo
	for _, a := range agents {
		if !a.IsDir() || CheckName("agent", a.Name()) != nil {
			continue
		}
		files, err := v.Files().ReadDir(filepath.Join(v.Root, "transcripts", a.Name()))
		if err != nil {
			return nil, fault.IO("read transcripts/"+a.Name(), err)
		}
		seen := map[string]bool{}
		for _, f := range files {
			name := strings.TrimSuffix(f.Name(), ".jsonl")
			if name == f.Name() || strings.HasPrefix(name, ".") {
				continue
			}
			base, _, _ := strings.Cut(name, ".")
			if seen[base] {
				continue
			}
			seen[base] = true
			t := TranscriptRef{Agent: a.Name(), Session: DecodeSessionFileName(base)}
			info, err := v.sessionInfo(t)
			if err != nil {
				return nil, err
			}
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		return out[i].Session < out[j].Session
	})
	return out, nil
}

func (v *Vault) sessionInfo(t TranscriptRef) (SessionInfo, error) {
	info := SessionInfo{Agent: t.Agent, Session: t.Session, Path: t.Path()}
	parts, err := v.parts(t)
	if err != nil {
		return info, err
	}
	info.Parts = len(parts)
	for _, p := range parts {
		if st, err := v.Files().Stat(v.Abs(t.Part(p))); err == nil {
			info.Bytes += st.Size()
		}
	}
	tail, err := v.TranscriptTail(t)
	info.Messages = tail.last
	return info, err
}

// AppendText records typed messages (from `transcript append` or a hook) in
// the transcript t, redacting secrets first (prepareText). When something
// was redacted, a transcript.redacted event records how many secrets of
// each kind, never the secrets.
func (tx *Tx) AppendText(t TranscriptRef, msgs []transcript.Message) (from, to int, err error) {
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

// PartPos is a place in a vault transcript: a byte offset into one part, at
// the start of a line (or the part's end). An import keeps such places to
// read only what was appended since, instead of the whole transcript.
type PartPos struct {
	Part int   `json:"part"`
	Off  int64 `json:"off"`
}

// Before reports whether p comes before q.
func (p PartPos) Before(q PartPos) bool {
	return p.Part < q.Part || p.Part == q.Part && p.Off < q.Off
}

// ValidPos reports whether p is still a line start within t: its part is at
// least that long and the byte before p is a newline. A transcript changed
// under a kept place (a repair, a hand edit) fails it, and the keeper reads
// from the start instead.
func (v *Vault) ValidPos(t TranscriptRef, p PartPos) bool {
	if p.Part < 0 || p.Off < 0 {
		return false
	}
	if p.Part == 0 && p.Off == 0 {
		return true
	}
	f, err := v.Files().Open(v.Abs(t.Part(p.Part)))
	if err != nil {
		return false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() < p.Off {
		return false
	}
	if p.Off == 0 {
		return true
	}
	var b [1]byte
	_, err = f.ReadAt(b[:], p.Off-1)
	return err == nil && b[0] == '\n'
}

// ReadFrom calls fn for each stored message of t from p on, through the last
// part, with the place just after it. A torn last line is skipped, as
// ReadTranscript skips it.
func (v *Vault) ReadFrom(t TranscriptRef, p PartPos, fn func(m transcript.Stored, end PartPos) error) error {
	for part, off := p.Part, p.Off; ; part, off = part+1, 0 {
		f, err := v.Files().Open(v.Abs(t.Part(part)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fault.IO("read "+t.Part(part).String(), err)
		}
		err = func() error {
			defer f.Close()
			r := bufio.NewReaderSize(io.NewSectionReader(f, off, 1<<62), 64<<10)
			for {
				line, err := r.ReadBytes('\n')
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return fault.IO("read "+t.Part(part).String(), err)
				}
				off += int64(len(line))
				m, err := transcript.DecodeLine(line)
				if err != nil {
					continue
				}
				if err := fn(m, PartPos{Part: part, Off: off}); err != nil {
					return err
				}
			}
		}()
		if err != nil {
			return err
		}
	}
}

// IDEndingAt returns the id of the stored message whose line ends at p, or
// "" when no message line ends there.
func (v *Vault) IDEndingAt(t TranscriptRef, p PartPos) string {
	if p.Off <= 0 {
		return ""
	}
	f, err := v.Files().Open(v.Abs(t.Part(p.Part)))
	if err != nil {
		return ""
	}
	defer f.Close()
	for window := int64(4 << 10); ; window *= 4 {
		start := max(0, p.Off-window)
		buf := make([]byte, p.Off-start)
		if _, err := f.ReadAt(buf, start); err != nil {
			return ""
		}
		if buf[len(buf)-1] != '\n' {
			return ""
		}
		body := buf[:len(buf)-1]
		i := bytes.LastIndexByte(body, '\n')
		if i < 0 && start > 0 {
			continue // the line is longer than the window
		}
		m, err := transcript.DecodeLine(body[i+1:])
		if err != nil {
			return ""
		}
		return m.ID
	}
}

// HookFormat marks messages a hook stored from the harness's payload rather
// than from its transcript file.
const HookFormat = "hook"

// MessageIDs returns the ids of the messages stored for t.
func (v *Vault) MessageIDs(t TranscriptRef) (map[string]bool, error) {
	ids := map[string]bool{}
	err := v.ReadTranscript(t, 1, 0, func(m transcript.Stored) error {
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
	if v.Rules == nil {
		return text, nil
	}
	return redact.Text(text, v.Rules)
}

// Queued returns the messages of t this transaction has queued so far (the
// spool's fold, which runs before a transaction's own work), in order:
// they follow the transcript's end on disk, tail.
func (tx *Tx) Queued(t TranscriptRef, tail transcriptTail) []transcript.Stored {
	tt := tx.transcripts[t]
	if tt == nil {
		return nil
	}
	var out []transcript.Stored
	for n := tail.Part; n <= tt.Part; n++ {
		rel := t.Part(n)
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
