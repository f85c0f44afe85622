package lineage

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"syscall"

	"github.com/memvault/memvault/vault"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/transcript"
)

// Reading a harness transcript for an import: a regular file only, opened
// without ever blocking, in windows of complete lines, after a look at its
// start that refuses a file of another format.

// sniffBytes is how far into a file the import looks, from its start, for a
// message before refusing a file whose lines are not of the format.
const sniffBytes = 8 << 20

// OpenRegular opens path for reading only if it is a regular file, without
// ever blocking: a named pipe would block an open until a writer comes, and
// a read of /dev/zero never ends. The open does not follow a symbolic link
// in the last component and does not wait for a writer (O_NONBLOCK, which
// changes nothing for a regular file); what it opened is then checked with
// fstat, so a path swapped between a check and the open cannot get round
// it. A missing file is ErrNotFound, anything else that is not a regular
// file ErrInvalid ("not a regular file (a named pipe)").
func OpenRegular(path string) (*os.File, error) { return openRegular(path, path) }

// openRegular is OpenRegular with the errors' subject named.
func openRegular(path, subject string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			e := fault.IO(subject, err).(*vault.Error)
			e.Class = vault.ErrNotFound
			return nil, e
		case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EMLINK): // EMLINK: FreeBSD's answer to O_NOFOLLOW
			return nil, fault.New(vault.ErrInvalid, "%s: not a regular file (a symbolic link)", subject)
		case errors.Is(err, syscall.ENXIO), errors.Is(err, syscall.EOPNOTSUPP): // a socket
			return nil, fault.New(vault.ErrInvalid, "%s: not a regular file (a socket)", subject)
		}
		return nil, fault.IO(subject, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fault.IO(subject, err)
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, fault.New(vault.ErrInvalid, "%s: not a regular file (%s)", subject, fileKind(info.Mode()))
	}
	return f, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "mode " + m.String()
}

// readWindow parses the complete lines of one window from cur, widening the
// window for a line longer than it. It returns nil when only a torn last
// line is left.
func readWindow(f *os.File, size int64, format transcript.Format, cur transcript.Cursor, window int64, popts transcript.Options) (*importBatchIn, error) {
	for ; ; window *= 2 {
		end := min(size, cur.Offset+window)
		res, err := transcript.Parse(format, f, end, cur, popts)
		if err != nil {
			return nil, err
		}
		if res.Next.Offset > cur.Offset {
			return &importBatchIn{from: cur, next: res.Next, msgs: res.Messages, stats: res.Stats, eof: res.Next.Offset == size}, nil
		}
		if end == size {
			return nil, nil
		}
	}
}

// sniff refuses a file that is not in the format: one whose first lines (up
// to sniffBytes) give no message while some are not JSON objects, or of
// types the format does not have. Redaction is left out: nothing is kept.
func sniff(f *os.File, size int64, source string, format transcript.Format) error {
	var stats transcript.Stats
	cur := transcript.Cursor{}
	popts := transcript.Options{NoRedact: true, Session: &transcript.Session{}}
	for cur.Offset < min(size, sniffBytes) {
		b, err := readWindow(f, size, format, cur, importWindow, popts)
		if err != nil || b == nil {
			return err
		}
		if len(b.msgs) > 0 {
			return nil
		}
		mergeStats(&stats, b.stats)
		cur = b.next
	}
	if stats.Lines > 0 && (stats.Invalid > 0 || len(stats.Unknown) > 0) {
		return wrongFormat(f, source, format)
	}
	return nil
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
			e := fault.New(vault.ErrInvalid, "import %s:%d: not a %s transcript: %s", source, n, format, why)
			return e.WithHint("check --format (one of %s)", formatList())
		}
		if err != nil {
			return fault.New(vault.ErrInvalid, "import %s: not a %s transcript", source, format)
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
