package vault

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/node"
)

// Crockford's base32 alphabet, lower case: no i, l, o or u, so ids survive
// being read aloud or retyped.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// NewID returns prefix followed by 26 characters: 48 bits of milliseconds
// since the epoch, then 80 random bits. Ids sort by creation time, and two
// clones of a vault can mint ids independently without ever colliding.
func NewID(prefix string, now time.Time) string {
	var r [10]byte
	if _, err := rand.Read(r[:]); err != nil {
		panic("memvault: no system randomness: " + err.Error())
	}
	return encodeID(prefix, now, r)
}

// derivedID is NewID with the 80 "random" bits taken from a digest of the
// content, for things that must get the same id whenever they are made from
// the same inputs (temporal nodes).
func derivedID(prefix string, t time.Time, digest []byte) string {
	var r [10]byte
	copy(r[:], digest)
	return encodeID(prefix, t, r)
}

func encodeID(prefix string, now time.Time, r [10]byte) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	copy(b[6:], r[:])
	var sb strings.Builder
	sb.Grow(len(prefix) + 26)
	sb.WriteString(prefix)
	// 128 bits in 26 five-bit groups: the first group carries the top 3 bits.
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	for i := 25; i >= 0; i-- {
		shift := uint(i * 5)
		var v uint64
		switch {
		case shift >= 64:
			v = hi >> (shift - 64)
		case shift > 59:
			v = lo>>shift | hi<<(64-shift)
		default:
			v = lo >> shift
		}
		sb.WriteByte(crockford[v&31])
	}
	return sb.String()
}

// The type markers of ids: what an id names is in its first two bytes.
const (
	EventIDMarker   = "e_"
	NodeIDMarker    = "n_"
	MessageIDMarker = "m_"
)

// idBodyLen is the length of an id after its marker (NewID).
const idBodyLen = 26

// MinIDPrefix is the fewest characters after the marker that an id prefix
// may have, as git asks for 4 hex digits of a hash. Ids begin with their
// time, so ids made the same day share their first 6 or 7 characters: a
// prefix that short is most often ambiguous, and then the candidates are
// listed. The floor keeps `e_0` from naming a row by luck.
const MinIDPrefix = 4

// maxIDCandidates is how many matches an ambiguous prefix lists.
const maxIDCandidates = 10

// idArg is what a person typed for an id, checked: the full id when it had
// the length of one, else a prefix of one, with its marker.
type idArg struct {
	typed string // as typed, for messages
	id    string // marker + body, the body lower case
	full  bool
}

// parseIDArg checks arg as an id or a prefix of one of marker's type.
// The marker may be left out ("01jq8x" is "e_01jq8x" where an event is
// meant); the body is Crockford base32 and is read case-insensitively.
func parseIDArg(verb, what, marker, arg string) (idArg, error) {
	typed := shownArg(arg)
	bad := func(problem string) error {
		e := fault.New(ErrInvalid, "%s: %s", strings.TrimSpace(verb+" "+typed), problem)
		return e.WithHint("%s ids are %s and %d characters of 0-9 a-z (no i, l, o, u); a unique prefix of %d or more characters after %s will do",
			what, marker, idBodyLen, MinIDPrefix, marker)
	}
	if arg == "" {
		return idArg{}, bad("empty")
	}
	if len(arg) > len(marker)+idBodyLen {
		return idArg{}, bad("longer than an id")
	}
	body := arg
	if i := strings.IndexByte(arg, '_'); i >= 0 {
		if got := arg[:i+1]; got != marker {
			if kind := idMarkerName(got); kind != "" {
				return idArg{}, bad(fmt.Sprintf("is %s id, not %s…", kind, marker))
			}
			return idArg{}, bad("not an id")
		}
		body = arg[i+1:]
	}
	body = strings.ToLower(body)
	for i := 0; i < len(body); i++ {
		if strings.IndexByte(crockford, body[i]) < 0 {
			return idArg{}, bad("not an id")
		}
	}
	switch {
	case len(body) > idBodyLen:
		return idArg{}, bad("longer than an id")
	case len(body) < MinIDPrefix:
		return idArg{}, bad(fmt.Sprintf("too short: give at least %d characters after %s", MinIDPrefix, marker))
	}
	return idArg{typed: typed, id: marker + body, full: len(body) == idBodyLen}, nil
}

// shownArg is arg as a message shows it: whole when it could be an id,
// else quoted and cut short, so that hostile input neither floods the
// terminal nor reaches it unescaped.
func shownArg(arg string) string {
	plain := len(arg) > 0 && len(arg) <= 40
	for i := 0; plain && i < len(arg); i++ {
		c := arg[i]
		plain = c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if plain {
		return arg
	}
	if r := []rune(arg); len(r) > 40 {
		arg = string(r[:40]) + "…"
	}
	return strconv.Quote(arg)
}

// idMarkerName names, with its article, the kind of id a marker begins.
func idMarkerName(marker string) string {
	switch marker {
	case EventIDMarker:
		return "an event"
	case NodeIDMarker:
		return "a node"
	case MessageIDMarker:
		return "a message"
	}
	return ""
}

// resolveID finds the one id among ids that q names: itself when it is
// full, else the only id that starts with it. describe gives a candidate's
// line in the hint of an ambiguous prefix.
func resolveID(verb, what string, q idArg, ids func(yield func(string) bool), describe func(id string) string, listHint string) (string, error) {
	var matches []string
	for id := range ids {
		if id == q.id && q.full {
			return id, nil
		}
		if !q.full && strings.HasPrefix(id, q.id) {
			matches = append(matches, id)
		}
	}
	subject := strings.TrimSpace(verb + " " + q.typed)
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", fault.New(ErrNotFound, "%s: no such %s", subject, what).WithHint("%s", listHint)
	}
	slices.Sort(matches)
	var b strings.Builder
	b.WriteString("give more characters; it could be any of:")
	for i, id := range matches {
		if i == maxIDCandidates {
			fmt.Fprintf(&b, "\n  … and %d more", len(matches)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %s", id)
		if d := describe(id); d != "" {
			b.WriteString("  " + d)
		}
	}
	return "", fault.New(ErrInvalid, "%s: ambiguous %s id prefix, %d %ss start with it", subject, what, len(matches), what).WithHint("%s", b.String())
}

// ResolveEventID returns the id of the event arg names: a full event id
// this state holds, or a prefix only one of its events' ids starts with
// (see MinIDPrefix). verb begins the messages ("retract e_01jq: …"). An
// unknown id is ErrNotFound; an ambiguous prefix, a malformed id or an id
// of another type ErrInvalid, whose hint lists the candidates. An id that
// does not have the form NewID gives (a hand-made one) still resolves when
// it is there whole.
func (st *State) ResolveEventID(verb, arg string) (string, error) {
	if st.lookup(arg) != nil {
		return arg, nil
	}
	q, err := parseIDArg(verb, "event", EventIDMarker, strings.TrimSpace(arg))
	if err != nil {
		return "", err
	}
	if q.full {
		if st.lookup(q.id) != nil {
			return q.id, nil
		}
		return "", fault.New(ErrNotFound, "%s: no such event", strings.TrimSpace(verb+" "+q.typed)).WithHint("list event ids with: memvault ledger")
	}
	ids := func(yield func(string) bool) {
		for _, r := range st.Rows {
			if !yield(r.ID) {
				return
			}
		}
	}
	describe := func(id string) string {
		r := st.lookup(id)
		if r == nil {
			return ""
		}
		text := strings.Join(strings.Fields(r.Text), " ")
		if utf8.RuneCountInString(text) > 60 {
			text = string([]rune(text)[:59]) + "…"
		}
		return fmt.Sprintf("%s  %s  %s", r.TS, r.Kind, text)
	}
	return resolveID(verb, "event", q, ids, describe, "list event ids with: memvault ledger")
}

// resolveNodeID is ResolveEventID for the nodes of the index ix.
func resolveNodeID(ix *node.Index, verb, arg string) (string, error) {
	if ix.Nodes[arg] != nil {
		return arg, nil
	}
	q, err := parseIDArg(verb, "node", NodeIDMarker, strings.TrimSpace(arg))
	if err != nil {
		return "", err
	}
	ids := func(yield func(string) bool) {
		for id := range ix.Nodes {
			if !yield(id) {
				return
			}
		}
	}
	describe := func(id string) string {
		n := ix.Nodes[id]
		return fmt.Sprintf("%s  %s  %s", n.Created, n.Kind, n.Title)
	}
	return resolveID(verb, "node", q, ids, describe, "list nodes with: memvault nodes")
}

// ResolveNodeID returns the id of the node arg names, as ResolveEventID
// does an event's, among the nodes of the vault's node index. A full id is returned as it is, without
// reading the node index: the caller's lookup says whether it exists, at
// the cost of a byte search of the cache instead of a decode of it all.
func (v *Vault) ResolveNodeID(verb, arg string) (string, error) {
	if q, err := parseIDArg(verb, "node", NodeIDMarker, strings.TrimSpace(arg)); err == nil && q.full {
		return q.id, nil
	}
	ix, err := node.Load(v.Files())
	if err != nil {
		return "", err
	}
	return resolveNodeID(ix, verb, arg)
}

// ResolveLink returns the full id of the event or node arg names, by its
// marker (an event when it has none): the ids `--link` takes.
func (tx *Tx) ResolveLink(arg string) (string, error) {
	if strings.HasPrefix(strings.TrimSpace(arg), NodeIDMarker) {
		return tx.v.ResolveNodeID("link", arg)
	}
	st, err := tx.State()
	if err != nil {
		return "", err
	}
	return st.ResolveEventID("link", arg)
}
