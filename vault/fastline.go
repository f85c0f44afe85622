package vault

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/memvault/memvault/vault/canonical"
)

// The fast path of parseLine. A line memvault wrote is already in the
// canonical form (vault/canonical): keys sorted, no white space, strings as
// the encoder writes them. For such a line the canonical form of the event
// without its hash is the line with the "hash" member cut out, so the hash
// is checked without decoding the line into maps and encoding it again.
// canonical.ScanObject proves the line is canonical byte by byte and
// fastParse picks the event's fields on the way; anything it is not sure
// of (a line that is not canonical, a key that differs from a field's name
// only in case, a field of another type) sends the line to the general
// path, which decides as before. FuzzFastLineMatchesSlow holds the two
// paths to the same answer.

// fastParseLine returns the event and whether its hash checks, with ok
// false when the line must take the general path.
func fastParseLine(line []byte) (ev *Event, hashOK bool, ok bool) {
	return fastParse(line, false)
}

// parseLineForChain is parseLine for verification: the event without
// the fields verification does not read (chainOnly), when the fast path
// takes the line.
func parseLineForChain(line []byte) (ev *Event, hashOK bool, err error) {
	if ev, ok, fast := fastParse(line, true); fast {
		return ev, ok, nil
	}
	return parseLineGeneral(line)
}

func fastParse(line []byte, chainOnly bool) (ev *Event, hashOK bool, ok bool) {
	ev = new(Event)
	hashStart, hashEnd := -1, -1
	var stored []byte
	if !canonical.ScanObject(line, func(key, val []byte, start, end int) bool {
		if !field(ev, key, val, chainOnly) {
			return false
		}
		if string(key) == "hash" {
			if val[0] != '"' || bytes.IndexByte(val, '\\') >= 0 {
				return false
			}
			stored, hashStart, hashEnd = val[1:len(val)-1], start, end
		}
		return true
	}) {
		return nil, false, false
	}
	if hashStart < 0 {
		return ev, false, true // no hash: the event, unverified
	}
	// Cut the member and one comma next to it out of the hashed bytes.
	if line[hashStart-1] == ',' {
		hashStart--
	} else if line[hashEnd] == ',' {
		hashEnd++
	}
	h := sha256.New()
	h.Write(line[:hashStart])
	h.Write(line[hashEnd:])
	var sum [sha256.Size]byte
	var hx [2 * sha256.Size]byte
	hex.Encode(hx[:], h.Sum(sum[:0]))
	return ev, len(stored) > 0 && bytes.Equal(hx[:], stored), true
}

// eventFields are the keys Event decodes, for the case-folding check.
var eventFields = [...]string{"id", "ts", "agent", "session", "harness", "kind", "thread", "text", "data", "links", "source", "prev", "hash"}

// field stores the value of a top-level member in ev the way
// json.Unmarshal would, or reports false when only json.Unmarshal can say
// what it does (a field of another type, null, a key that folds to a
// field's name).
func field(ev *Event, key, val []byte, chainOnly bool) bool {
	var dst *string
	switch string(key) {
	case "id":
		dst = &ev.ID
	case "ts":
		dst = &ev.TS
	case "agent":
		dst = &ev.Agent
	case "session":
		dst = &ev.Session
	case "harness":
		dst = &ev.Harness
	case "kind":
		dst = &ev.Kind
	case "thread":
		dst = &ev.Thread
	case "text":
		dst = &ev.Text
	case "source":
		dst = &ev.Source
	case "prev":
		dst = &ev.Prev
	case "hash":
		dst = &ev.Hash
	case "data":
		if val[0] == 'n' {
			return false
		}
		ev.Data = append(json.RawMessage(nil), val...)
		return true
	case "links":
		links, ok := canonical.Strings(val)
		ev.Links = links
		return ok
	default:
		for _, f := range eventFields {
			if bytes.EqualFold(key, []byte(f)) {
				return false
			}
		}
		return true // a key Event does not know: kept in the hash only
	}
	if val[0] != '"' {
		return false
	}
	if chainOnly && dst != &ev.ID && dst != &ev.TS && dst != &ev.Kind && dst != &ev.Prev && dst != &ev.Hash {
		return true // a string, as json.Unmarshal wants; not kept
	}
	str, ok := canonical.Unquote(val)
	*dst = str
	return ok
}
