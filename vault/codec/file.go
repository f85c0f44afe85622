package codec

import (
	"bytes"
	"encoding/binary"
	"io"
	"path/filepath"

	"github.com/memvault/memvault/vault/fileio"
)

// The framing every file under .state/ shares, whatever view wrote it.

// Magic is the first line of every file under .state/.
const Magic = "memvault derived\n"

// FilePath is where the cache name lives: .state/<name>.bin below root.
func FilePath(root, name string) string {
	return filepath.Join(root, ".state", name+".bin")
}

// WriteFile writes .state/<name>.bin in the framing every derived
// file shares: the magic line, the length of the part read at once (8
// bytes), that part (name, version, what body writes), its CRC-32, and
// then the blocks body put in the tail, which a view reads one by one when
// it needs them (each with its own CRC-32, Encoder.tailBlock). It is a
// cache: written without fsync. When body marks the encoding bad (a block
// of the old file it copies no longer reads), the old file is removed
// rather than kept: the next reader rebuilds the cache from the ledger and
// saves a sound one, where keeping it would fail every save until the
// damaged part changes. It reports whether the file was written. A cache
// kept per segment rather than as one Derived view (the corrections', the
// scope's facts in vault/scope) is written through it too, so every file
// under .state/ has one framing and one check.
func WriteFile(root, name string, version uint64, body func(e *Encoder)) bool {
	head := len(Magic) + 8
	e := &Encoder{B: make([]byte, head, 4096)}
	copy(e.B, Magic)
	e.Str(name)
	e.Uint64(version)
	body(e)
	if e.Bad {
		_ = fileio.At(root).Remove(FilePath(root, name))
		return false
	}
	binary.LittleEndian.PutUint64(e.B[len(Magic):], uint64(len(e.B)-head))
	e.B = binary.LittleEndian.AppendUint32(e.B, Sum(e.B[head:]))
	e.B = append(e.B, e.Tail()...)
	return fileio.At(root).WriteCache(FilePath(root, name), e.B) == nil
}

// ReadFile reads what WriteFile wrote and returns a decoder at
// the start of the body; false when the file is missing, torn, damaged, or
// of another name or version. The tail is not read: when there is one, the
// decoder holds the open file for it (the file is replaced by rename, never
// rewritten in place, so it stays the file that was checked).
func ReadFile(root, name string, version uint64) (*Decoder, bool) {
	f, err := fileio.At(root).Open(FilePath(root, name))
	if err != nil {
		return nil, false
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	info, err := f.Stat()
	if err != nil {
		return nil, false
	}
	head := make([]byte, len(Magic)+8)
	if _, err := io.ReadFull(f, head); err != nil || !bytes.HasPrefix(head, []byte(Magic)) {
		return nil, false
	}
	n := binary.LittleEndian.Uint64(head[len(Magic):])
	if n > uint64(info.Size()) || int64(len(head))+int64(n)+4 > info.Size() {
		return nil, false
	}
	buf := make([]byte, n+4)
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, false
	}
	body := buf[:n:n]
	if Sum(body) != binary.LittleEndian.Uint32(buf[n:]) {
		return nil, false
	}
	dec := NewDecoder(body)
	if dec.Str() != name || dec.Uint64() != version || dec.Failed() {
		return nil, false
	}
	if tail := int64(len(head)) + int64(len(buf)); tail < info.Size() {
		dec.SetTail(f, tail, info.Size()-tail)
		keep = true
	}
	return dec, true
}
