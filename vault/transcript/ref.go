package transcript

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// maxSessionLen bounds a session key before encoding.
const maxSessionLen = 256

// Ref names one vault transcript: agent plus session key. The pair, not
// the session key alone, is the identity: two agents may use the same key.
type Ref struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
}

// Check refuses an agent that is not one path element and a session key
// CheckSession refuses.
func (t Ref) Check() error {
	if err := fileio.CheckName("agent", t.Agent); err != nil {
		return err
	}
	return CheckSession(t.Session)
}

// Part is the slash path, relative to the vault, of part n (0 is the
// first, unnumbered file): transcripts/<agent>/<session>[.<n>].jsonl.
func (t Ref) Part(n int) string {
	name := SessionFileName(t.Session)
	if n > 0 {
		name += "." + strconv.Itoa(n)
	}
	return "transcripts/" + t.Agent + "/" + name + ".jsonl"
}

// Path is the transcript's first part, the name nodes cite in their span.
func (t Ref) Path() string { return t.Part(0) }

// CheckSession validates a session key. Session keys come from harnesses
// and may hold any printable text; they reach the file system only through
// SessionFileName, which encodes them, so only what would break a commit
// trailer or a terminal is refused.
func CheckSession(s string) error {
	switch {
	case s == "":
		return fault.New(fault.ErrInvalid, "session: empty")
	case len(s) > maxSessionLen:
		return fault.New(fault.ErrInvalid, "session: longer than %d bytes", maxSessionLen)
	case !utf8.ValidString(s):
		return fault.New(fault.ErrInvalid, "session: not valid utf-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fault.New(fault.ErrInvalid, "session %q: contains a control character", s)
		}
	}
	return nil
}

// SessionFileName encodes a session key as a file name: ASCII letters,
// digits, '-' and '_' stay, every other byte becomes %XX. The result has no
// dot, no separator and cannot start with a dot, so "<name>.<n>.jsonl" parts
// are unambiguous and no key can escape its folder. Very long encodings are
// cut and suffixed with a hash of the key so they stay unique.
func SessionFileName(key string) string {
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

// DecodeSessionFileName reverses SessionFileName for names that were not
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

// Pos is a place in a vault transcript: a byte offset into one part, at
// the start of a line (or the part's end). An import keeps such places to
// read only what was appended since, instead of the whole transcript.
type Pos struct {
	Part int   `json:"part"`
	Off  int64 `json:"off"`
}

// Before reports whether p comes before q.
func (p Pos) Before(q Pos) bool {
	return p.Part < q.Part || p.Part == q.Part && p.Off < q.Off
}
