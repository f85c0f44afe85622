package fileio

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memvault/memvault/vault/fault"
)

// maxNameLen bounds every outside name that becomes a path element. File
// systems commonly allow 255 bytes; staying well below leaves room for
// suffixes such as ".3.jsonl".
const maxNameLen = 128

// CheckName validates one outside name (agent id, session key, node id, slug)
// for use as a single path element below a Root. what names the kind of
// value in the error.
func CheckName(what, s string) error {
	switch {
	case s == "":
		return fault.New(fault.ErrInvalid, "%s: empty", what)
	case len(s) > maxNameLen:
		return fault.New(fault.ErrInvalid, "%s: longer than %d bytes", what, maxNameLen)
	case !utf8.ValidString(s):
		return fault.New(fault.ErrInvalid, "%s: not valid utf-8", what)
	}
	for _, r := range s {
		if r == '/' || r == '\\' || r == 0 || unicode.IsControl(r) {
			return fault.New(fault.ErrInvalid, "%s %q: contains a path separator or control character", what, s)
		}
	}
	if strings.HasPrefix(s, ".") {
		return fault.New(fault.ErrInvalid, "%s %q: must not start with a dot", what, s)
	}
	return nil
}
