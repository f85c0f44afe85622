package transcript

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// Reading a vault transcript back. Every read goes through the vault's
// fileio.Root, so no symbolic link below the vault is followed; the
// engine's transaction is the only writer of these files.

// ErrStop, returned by a reader's callback, ends the read early without an
// error.
var ErrStop = errors.New("stop")

// HookFormat marks messages a hook stored from the harness's payload rather
// than from its transcript file.
const HookFormat = "hook"

// abs is the path of the vault-relative slash path rel below fsys.
func abs(fsys fileio.Root, rel string) string {
	return filepath.Join(fsys.Dir(), filepath.FromSlash(rel))
}

// Parts lists the transcript's part numbers in order. Parts are numbered
// without gaps, so this stats <session>.jsonl, <session>.1.jsonl, … until
// one is missing, instead of listing a folder that holds every session of
// the agent.
func Parts(fsys fileio.Root, t Ref) ([]int, error) {
	var parts []int
	for n := 0; ; n++ {
		_, err := fsys.Stat(abs(fsys, t.Part(n)))
		if errors.Is(err, fs.ErrNotExist) {
			return parts, nil
		}
		if err != nil {
			return nil, fault.IO("stat "+t.Part(n), err)
		}
		parts = append(parts, n)
	}
}

// End is where a transcript ends on disk, what an appender continues from.
type End struct {
	Part int   // the last part
	Size int64 // its size in bytes
	Last int   // the sequence number of the last stored message, 0 for none
}

// EndOf reads where t ends, looking only at the ends of its parts: the
// last complete line of the last part, or of an earlier part when that
// line is not a message. A transcript without parts ends at the zero End.
func EndOf(fsys fileio.Root, t Ref) (End, error) {
	parts, err := Parts(fsys, t)
	if err != nil || len(parts) == 0 {
		return End{}, err
	}
	e := End{Part: parts[len(parts)-1]}
	for i := len(parts) - 1; i >= 0; i-- {
		size, body, err := fsys.ReadEnd(abs(fsys, t.Part(parts[i])))
		if err != nil {
			return e, err
		}
		if i == len(parts)-1 {
			e.Size = size
		}
		if k := bytes.LastIndexByte(body, '\n'); k >= 0 {
			body = body[:k]
			line := body[bytes.LastIndexByte(body, '\n')+1:]
			if m, err := DecodeLine(line); err == nil {
				e.Last = m.N
				return e, nil
			}
		}
	}
	return e, nil
}

// Read calls fn for each stored message of t with from ≤ N ≤ to (to ≤ 0:
// to the end), reading part by part so memory stays bounded. A torn last
// line is skipped.
func Read(fsys fileio.Root, t Ref, from, to int, fn func(Stored) error) error {
	if err := t.Check(); err != nil {
		return err
	}
	parts, err := Parts(fsys, t)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		e := fault.New(fault.ErrNotFound, "transcript: agent %s has no transcript for session %q", t.Agent, t.Session)
		return e.WithHint("list transcripts with: memvault sessions")
	}
	for _, p := range parts {
		if err := readPart(fsys, t, p, from, to, fn); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}

func readPart(fsys fileio.Root, t Ref, part, from, to int, fn func(Stored) error) error {
	f, err := fsys.Open(abs(fsys, t.Part(part)))
	if err != nil {
		return fault.IO("read "+t.Part(part), err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return nil // a torn last line, if any, is not a message yet
		}
		if err != nil {
			return fault.IO("read "+t.Part(part), err)
		}
		m, err := DecodeLine(line)
		if err != nil {
			continue
		}
		if m.N < from {
			continue
		}
		if to > 0 && m.N > to {
			return ErrStop
		}
		if err := fn(m); err != nil {
			return err
		}
	}
}

// MessageIDs returns the ids of the messages stored for t.
func MessageIDs(fsys fileio.Root, t Ref) (map[string]bool, error) {
	ids := map[string]bool{}
	err := Read(fsys, t, 1, 0, func(m Stored) error {
		ids[m.ID] = true
		return nil
	})
	if errors.Is(err, fault.ErrNotFound) {
		return ids, nil
	}
	return ids, err
}

// SessionInfo describes one stored transcript for `memvault sessions`.
type SessionInfo struct {
	Agent    string `json:"agent"`
	Session  string `json:"session"`
	Path     string `json:"path"`
	Parts    int    `json:"parts"`
	Messages int    `json:"messages"`
	Bytes    int64  `json:"bytes"`
}

// Sessions lists every transcript below fsys, by agent then session.
func Sessions(fsys fileio.Root) ([]SessionInfo, error) {
	agents, err := fsys.ReadDir(filepath.Join(fsys.Dir(), "transcripts"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fault.IO("read transcripts", err)
	}
	var out []SessionInfo
	for _, a := range agents {
		if !a.IsDir() || fileio.CheckName("agent", a.Name()) != nil {
			continue
		}
		files, err := fsys.ReadDir(filepath.Join(fsys.Dir(), "transcripts", a.Name()))
		if err != nil {
			return nil, fault.IO("read transcripts/"+a.Name(), err)
		}
		seen := map[string]bool{}
		for _, f := range files {
			name := strings.TrimSuffix(f.Name(), ".jsonl")
			if name == f.Name() || strings.HasPrefix(name, ".") {
				continue
			}
			base, _, _ := strings.Cut(name, ".")
			if seen[base] {
				continue
			}
			seen[base] = true
			info, err := sessionInfo(fsys, Ref{Agent: a.Name(), Session: DecodeSessionFileName(base)})
			if err != nil {
				return nil, err
			}
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		return out[i].Session < out[j].Session
	})
	return out, nil
}

func sessionInfo(fsys fileio.Root, t Ref) (SessionInfo, error) {
	info := SessionInfo{Agent: t.Agent, Session: t.Session, Path: t.Path()}
	parts, err := Parts(fsys, t)
	if err != nil {
		return info, err
	}
	info.Parts = len(parts)
	for _, p := range parts {
		if st, err := fsys.Stat(abs(fsys, t.Part(p))); err == nil {
			info.Bytes += st.Size()
		}
	}
	end, err := EndOf(fsys, t)
	info.Messages = end.Last
	return info, err
}
