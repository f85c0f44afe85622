package vault

import (
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/transcript"
)

// RelPath is a slash-separated path inside the vault. The only ways to get one
// are the constructors in this file, which refuse anything that could escape
// the vault or collide with its machinery, so code holding a RelPath never
// has to re-check it.
type RelPath struct{ p string }

// String returns the slash-separated form, as git and the ledger use it.
func (r RelPath) String() string { return r.p }

// IsZero reports whether r was never set.
func (r RelPath) IsZero() bool { return r.p == "" }

// Files is the vault's folder as memvault reads and writes it: every file
// below the root is opened, read, listed, created, appended to, replaced
// and removed through it, and none through a symbolic link (a clone can
// hold links git checked out; following one would read or write outside
// the vault). Whatever the vault's own path passes through is the user's
// choice and is not checked. TestNoLinkFollowed keeps the vault's code
// from reaching its files any other way.
func (v *Vault) Files() fileio.Root { return fileio.At(v.Root) }

// ReadFile reads the vault's file at rel, a slash path relative to the
// root, as every read of the vault's is made: through no symbolic link.
// It is for layers above the vault that show a file as it is.
func (v *Vault) ReadFile(rel string) ([]byte, error) {
	return v.Files().ReadFile(filepath.FromSlash(rel))
}

// relPath joins trusted constant elements and outside names into a RelPath.
// Every element is checked with CheckName, constants included: the cost is
// negligible and it keeps one rule for all.
func relPath(what string, elems ...string) (RelPath, error) {
	for _, e := range elems {
		if err := fileio.CheckName(what, e); err != nil {
			return RelPath{}, err
		}
	}
	return RelPath{path.Join(elems...)}, nil
}

// MustRel builds a RelPath from constants known at compile time, such as
// ".gitignore", which outside names may not imitate.
func MustRel(elems ...string) RelPath {
	p := path.Join(elems...)
	if p != path.Clean(p) || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
		panic("vault: bad constant path " + p)
	}
	return RelPath{p}
}

// Thread is a parsed thread key "<kind>:<slug>", the stable name of one
// context stream (a project, a person, a topic).
type Thread struct {
	Kind string
	Slug string
}

// ParseThread validates a thread key. Keys are lower case so that one thread
// never ends up as two files on a case-insensitive file system. The grammar
// is kind:slug, kind `[a-z][a-z0-9-]{0,31}` and slug
// `[a-z0-9][a-z0-9._-]{0,127}`; it is checked by hand, not by a regular
// expression, because compiling one costs a hook a noticeable part of its
// start (TestParseThreadGrammar holds the two to the same answers).
func ParseThread(s string) (Thread, error) {
	kind, slug, ok := strings.Cut(s, ":")
	if !ok || !threadPart(kind, 32, false) || !threadPart(slug, 128, true) {
		e := fault.New(ErrInvalid, "thread %q: malformed key, want kind:slug", s)
		if low := strings.ToLower(s); !ok && threadPart(low, 128, true) {
			return Thread{}, e.WithHint("a thread key names its kind: project:%s, person:%s or topic:%s", low, low, low)
		}
		return Thread{}, e.WithHint("a thread key is lower case, like project:shop or person:alice")
	}
	return Thread{Kind: kind, Slug: slug}, nil
}

// threadPart reports whether p is one part of a thread key: 1 to max bytes,
// the first a lower-case letter (or a digit in a slug), the rest lower-case
// letters, digits and '-' (and '.' and '_' in a slug).
func threadPart(p string, max int, slug bool) bool {
	if p == "" || len(p) > max {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9':
			if i == 0 && !slug {
				return false
			}
		case c == '-' || slug && (c == '.' || c == '_'):
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// String returns the key form "kind:slug".
func (t Thread) String() string {
	if t.Kind == "" {
		return ""
	}
	return t.Kind + ":" + t.Slug
}

// HeadPath is where the thread's Tier 2 head lives.
func (t Thread) HeadPath() RelPath {
	return RelPath{path.Join("threads", t.Kind, t.Slug+".md")}
}

// seg turns a segment's RelPath back into a segment; only used on paths
// listSegments produced.
func (r RelPath) seg() Segment {
	s, _ := SegmentFromPath(r.String())
	return s
}

// HeadThread is the thread whose head is at head ("threads/<kind>/<slug>.md");
// ok is false for any other path.
func HeadThread(head string) (t Thread, ok bool) {
	rest, ok := strings.CutPrefix(head, "threads/")
	if !ok {
		return Thread{}, false
	}
	kind, slug, ok := strings.Cut(strings.TrimSuffix(rest, ".md"), "/")
	if !ok || !strings.HasSuffix(rest, ".md") {
		return Thread{}, false
	}
	t, err := ParseThread(kind + ":" + slug)
	if err != nil {
		return Thread{}, false
	}
	return t, true
}

// HeadRel is where the head named head lives: MEMORY.md, CONTINUITY.md or
// a thread's head; ok is false for a path that is none of them.
func HeadRel(head string) (rel RelPath, ok bool) {
	switch head {
	case MemoryHead, ContinuityHead:
		return MustRel(head), true
	}
	t, ok := HeadThread(head)
	if !ok {
		return RelPath{}, false
	}
	return t.HeadPath(), true
}

// Identity fields (the agent, the session, the harness and the thread an
// event names) are stored as they are: they become file names, commit
// trailers and the ledger's keys, where a redaction marker would merge two
// sessions into one or break a path. So a value that holds a credential
// is refused instead of redacted, with the kind of credential but never the
// value in the error (errors reach terminals and the hook log).

// checkIdentity refuses an identity value that the vault's redaction rules
// would change. what names the field ("agent", "session", …).
func (v *Vault) checkIdentity(what, s string) error {
	if s == "" {
		return nil
	}
	_, counts := v.Redact(s)
	if len(counts) == 0 {
		return nil
	}
	kinds := slices.Sorted(maps.Keys(counts))
	e := fault.New(ErrInvalid, "%s: holds a credential (%s); memvault never stores one, not even as a name", what, strings.Join(kinds, ", "))
	return e.WithHint("choose another %s", what)
}

// check validates the identity a transaction writes as, before it takes the
// lock: the agent is a file name, the session a key of printable text, the
// harness a name; none may hold a credential.
func (opts TxOptions) check(v *Vault) error {
	if err := fileio.CheckName("agent", opts.Agent); err != nil {
		return err
	}
	if opts.Session != "" {
		if err := transcript.CheckSession(opts.Session); err != nil {
			return err
		}
	}
	if opts.Harness != "" {
		if err := fileio.CheckName("harness", opts.Harness); err != nil {
			return err
		}
	}
	for _, f := range [][2]string{{"agent", opts.Agent}, {"session", opts.Session}, {"harness", opts.Harness}} {
		if err := v.checkIdentity(f[0], f[1]); err != nil {
			return err
		}
	}
	return nil
}

// checkEvents validates the identity fields of the events fn queued, which
// a caller may have set from a payload rather than from the options.
func (tx *Tx) checkEvents() error {
	for _, ev := range tx.events {
		for _, f := range [][2]string{{"agent", ev.Agent}, {"session", ev.Session}, {"harness", ev.Harness}, {"thread", ev.Thread}} {
			if err := tx.v.checkIdentity(f[0], f[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// The checks of outside text: what a person types is refused when git or
// the ledger could not keep it (CheckText), a harness's text is made
// storable (CleanText).

// MaxTextBytes bounds one event's text. The ledger is memory, not a file
// store; a megabyte is far beyond any fact or decision.
const MaxTextBytes = 1 << 20

// CheckText refuses text that git or the ledger cannot keep as it is:
// invalid UTF-8, a NUL byte, more than MaxTextBytes, or (unless allowEmpty)
// nothing but white space. what names the text in the error.
func CheckText(what, s string, allowEmpty bool) error {
	switch {
	case !utf8.ValidString(s):
		return fault.New(ErrInvalid, "%s: not valid utf-8", what)
	case strings.IndexByte(s, 0) >= 0:
		// git refuses a NUL in a commit message (fsck), and text becomes
		// commit subjects and bodies.
		return fault.New(ErrInvalid, "%s: contains a NUL byte", what)
	case len(s) > MaxTextBytes:
		e := fault.New(ErrInvalid, "%s: %d bytes is over the limit of %d (1 MiB)", what, len(s), MaxTextBytes)
		return e.WithHint("store large material as a transcript and remember a short summary")
	case !allowEmpty && strings.TrimSpace(s) == "":
		return fault.New(ErrInvalid, "%s: empty", what)
	}
	return nil
}

// CleanText makes text from a harness storable as it is: invalid UTF-8 and
// NUL bytes become U+FFFD. Text a person types is refused instead
// (CheckText); a hook's text is kept, since a hook must not lose a prompt.
func CleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}
