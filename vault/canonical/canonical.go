// Package canonical is the one canonical JSON encoder: object keys sorted
// by their UTF-8 bytes, no insignificant whitespace, numbers exactly as
// written, no HTML escaping. The ledger hashes an event in this form
// (Write, Hash), so the hash covers what an event says and not how some
// tool spaced it; an executor's checksum is the SHA-256 of its result in it
// (Of). Codex hashes a hook's configuration the same way but escapes
// strings as Rust's serde_json does (WriteRust), so the one walker takes
// the string escaping as a parameter.
package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Write encodes v in the ledger's canonical form, strings escaped as
// encoding/json escapes them (without the HTML escapes).
func Write(buf *bytes.Buffer, v any) error { return write(buf, v, WriteString) }

// WriteRust encodes v canonically with strings escaped as Rust's
// serde_json does: only '"', '\\' and control characters, no \u2028, so
// that the bytes hashed are Codex's.
func WriteRust(buf *bytes.Buffer, v any) error { return write(buf, v, writeRustString) }

// write encodes v, a value decoded with json.Decoder.UseNumber (or built of
// maps, slices, strings, bools and int64s), with object keys sorted by
// their UTF-8 bytes and no insignificant whitespace; str writes each string.
func write(buf *bytes.Buffer, v any, str func(*bytes.Buffer, string)) error {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if x {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		buf.WriteString(x.String())
	case int64:
		buf.WriteString(strconv.FormatInt(x, 10))
	case string:
		str(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := write(buf, e, str); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			str(buf, k)
			buf.WriteByte(':')
			if err := write(buf, x[k], str); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("canonical json: unsupported type %T", v)
	}
	return nil
}

// WriteString writes s as a JSON string with the standard escapes only.
func WriteString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // encoding a string cannot fail
	buf.Truncate(buf.Len() - 1) // drop the newline Encode appends
}

// writeRustString writes s as serde_json writes a string.
func writeRustString(b *bytes.Buffer, s string) {
	const hexDigits = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hexDigits[r>>4])
			b.WriteByte(hexDigits[r&0xf])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// Decode decodes one JSON value keeping numbers as written.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the json value")
	}
	return v, nil
}

// Hash returns the hex SHA-256 of the canonical form of obj.
func Hash(obj map[string]any) (string, error) {
	var buf bytes.Buffer
	if err := Write(&buf, obj); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

// Of re-encodes one JSON value in the ledger's canonical form,
// the bytes an event's hash covers; an executor's checksum is the SHA-256
// of its result in this form (docs/EXECUTORS.md).
func Of(data []byte) ([]byte, error) {
	v, err := Decode(data)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := Write(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// HoldsNUL reports whether a decoded JSON value has a NUL in a string or a
// key: git refuses NUL in what it stores as text, so the ledger refuses
// such a value (moved here from the engine, issue 36).
func HoldsNUL(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.IndexByte(t, 0) >= 0
	case []any:
		return slices.ContainsFunc(t, HoldsNUL)
	case map[string]any:
		for k, x := range t {
			if strings.IndexByte(k, 0) >= 0 || HoldsNUL(x) {
				return true
			}
		}
	}
	return false
}
