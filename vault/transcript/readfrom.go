package transcript

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// Reading from a kept place: an import remembers the Pos its last read
// ended at and reads only what was appended since.

// ValidPos reports whether p is still a line start within t: its part is at
// least that long and the byte before p is a newline. A transcript changed
// under a kept place (a repair, a hand edit) fails it, and the keeper reads
// from the start instead.
func ValidPos(fsys fileio.Root, t Ref, p Pos) bool {
	if p.Part < 0 || p.Off < 0 {
		return false
	}
	if p.Part == 0 && p.Off == 0 {
		return true
	}
	f, err := fsys.Open(abs(fsys, t.Part(p.Part)))
	if err != nil {
		return false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() < p.Off {
		return false
	}
	if p.Off == 0 {
		return true
	}
	var b [1]byte
	_, err = f.ReadAt(b[:], p.Off-1)
	return err == nil && b[0] == '\n'
}

// ReadFrom calls fn for each stored message of t from p on, through the last
// part, with the place just after it. A torn last line is skipped, as Read
// skips it.
func ReadFrom(fsys fileio.Root, t Ref, p Pos, fn func(m Stored, end Pos) error) error {
	for part, off := p.Part, p.Off; ; part, off = part+1, 0 {
		f, err := fsys.Open(abs(fsys, t.Part(part)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fault.IO("read "+t.Part(part), err)
		}
		err = func() error {
			defer f.Close()
			r := bufio.NewReaderSize(io.NewSectionReader(f, off, 1<<62), 64<<10)
			for {
				line, err := r.ReadBytes('\n')
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return fault.IO("read "+t.Part(part), err)
				}
				off += int64(len(line))
				m, err := DecodeLine(line)
				if err != nil {
					continue
				}
				if err := fn(m, Pos{Part: part, Off: off}); err != nil {
					return err
				}
			}
		}()
		if err != nil {
			return err
		}
	}
}

// IDEndingAt returns the id of the stored message whose line ends at p, or
// "" when no message line ends there.
func IDEndingAt(fsys fileio.Root, t Ref, p Pos) string {
	if p.Off <= 0 {
		return ""
	}
	f, err := fsys.Open(abs(fsys, t.Part(p.Part)))
	if err != nil {
		return ""
	}
	defer f.Close()
	for window := int64(4 << 10); ; window *= 4 {
		start := max(0, p.Off-window)
		buf := make([]byte, p.Off-start)
		if _, err := f.ReadAt(buf, start); err != nil {
			return ""
		}
		if buf[len(buf)-1] != '\n' {
			return ""
		}
		body := buf[:len(buf)-1]
		i := bytes.LastIndexByte(body, '\n')
		if i < 0 && start > 0 {
			continue // the line is longer than the window
		}
		m, err := DecodeLine(body[i+1:])
		if err != nil {
			return ""
		}
		return m.ID
	}
}
