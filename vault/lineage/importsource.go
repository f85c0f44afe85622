package lineage

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/memvault/memvault/vault"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
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
// a read of /dev/zero never ends. It is fileio.OpenInput without a size
// limit, refusing a symbolic link in the last component (a harness names
// its transcript by its real path). A missing file is ErrNotFound,
// anything else that is not a regular file ErrInvalid ("not a regular file
// (a named pipe)").
func OpenRegular(path string) (*os.File, error) {
	f, _, err := fileio.OpenInput(path, path, fileio.InputOptions{NoFollow: true})
	return f, err
}

// MaxTranscriptBytes is the largest transcript file an import reads: it
// is read in windows, in constant memory, so the limit is only one a
// runaway file meets (a harness's transcript of a long session is tens of
// megabytes).
const MaxTranscriptBytes = 4 << 30

// MaxTranscriptLine is the longest line an import reads: a window widens
// for a longer line, and a line is held whole while it is parsed, so
// without a bound one line of a file of zeros without a newline would take
// memory in proportion to the file. A harness's longest lines (a pasted
// image, base64) are a few megabytes.
const MaxTranscriptLine = 32 << 20

// readWindow parses the complete lines of one window from cur, widening the
// window for a line longer than it, up to MaxTranscriptLine. It returns nil
// when only a torn last line is left.
func readWindow(f *os.File, size int64, format transcript.Format, cur transcript.Cursor, window int64, popts transcript.Options) (*importBatchIn, error) {
	for ; ; window *= 2 {
		if window > MaxTranscriptLine {
			return nil, fault.New(vault.ErrInvalid, "import: the line at byte %d is over %d bytes", cur.Offset, MaxTranscriptLine)
		}
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
