package mcp

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// Text that is not UTF-8. The command line refuses it (vault.CheckText:
// "text: not valid utf-8", invalid, exit 2); a JSON decoder replaces it
// with U+FFFD before any handler sees a string, and would store the
// replacement where the command line refuses. So a call's arguments are
// checked as the bytes the client sent: bytes that are not UTF-8, or an
// escaped UTF-16 surrogate without its pair (\ud800, which is what such
// bytes look like through a client that escapes), anywhere in an argument
// refuse the call with the command line's error, naming the argument. A
// U+FFFD the client sent as such is text like any other. The check is a
// scan of bytes the SDK holds already; the arguments are looked into only
// when it finds something.

// checkUTF8 refuses arguments that hold text that is not UTF-8.
func checkUTF8(raw json.RawMessage) error {
	if validText(raw) {
		return nil
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) == nil {
		names := make([]string, 0, len(args))
		for name := range args {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if !validText(args[name]) {
				return fault.New(vault.ErrInvalid, "%s: not valid utf-8", name)
			}
		}
	}
	// An argument's name, then.
	return fault.New(vault.ErrInvalid, "arguments: not valid utf-8")
}

// validText reports whether JSON text holds only UTF-8 and no escaped
// surrogate without its pair.
func validText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return true
		}
		i += j
		if i+1 >= len(b) {
			return true
		}
		if b[i+1] != 'u' {
			i += 2 // \\, \" and the rest: the escaped byte is not an escape
			continue
		}
		r, ok := escapedRune(b[i:])
		if !ok {
			return true // not our business: the decoder refuses it
		}
		i += 6
		if !utf16.IsSurrogate(r) {
			continue
		}
		low, ok := escapedRune(b[i:])
		if r >= 0xDC00 || !ok || utf16.DecodeRune(r, low) == utf8.RuneError {
			return false
		}
		i += 6
	}
}

// escapedRune reads a \uXXXX escape at the start of b.
func escapedRune(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	return rune(n), err == nil
}
