package vault

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
)

// canonicalJSON encodes a value decoded with json.Decoder.UseNumber into the
// ledger's canonical form: object keys sorted by their UTF-8 bytes, no
// insignificant whitespace, numbers exactly as written, and no HTML escaping.
// Hashing this form, rather than the bytes on disk, means the hash covers what
// an event says and not how some tool chose to space it.
func canonicalJSON(buf *bytes.Buffer, v any) error {
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
	case string:
		writeJSONString(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := canonicalJSON(buf, e); err != nil {
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
			writeJSONString(buf, k)
			buf.WriteByte(':')
			if err := canonicalJSON(buf, x[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("canonical json: unsupported type %T", v)
	}
	return nil
}

// writeJSONString writes s as a JSON string with the standard escapes only.
func writeJSONString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // encoding a string cannot fail
	buf.Truncate(buf.Len() - 1) // drop the newline Encode appends
}

// DecodeJSON decodes one JSON value keeping numbers as written.
func DecodeJSON(data []byte) (any, error) {
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

// hashCanonical returns the hex SHA-256 of the canonical form of obj.
func hashCanonical(obj map[string]any) (string, error) {
	var buf bytes.Buffer
	if err := canonicalJSON(&buf, obj); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

func JSONUnmarshal(data []byte, v any) error {
	if len(data) == 0 {
		return fmt.Errorf("no data")
	}
	return json.Unmarshal(data, v)
}

// SortedKeys returns the members of a set in order.
func SortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CanonicalJSON re-encodes one JSON value in the ledger's canonical form,
// the bytes an event's hash covers; an executor's checksum is the SHA-256
// of its result in this form (docs/EXECUTORS.md).
func CanonicalJSON(data []byte) ([]byte, error) {
	v, err := DecodeJSON(data)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := canonicalJSON(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
