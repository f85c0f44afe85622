package vault

// The node checks of verify: each node.created event's file exists, names
// its id and cites a transcript span that exists, checked by workers while
// the ledger is walked (verify.go).

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/transcript"
)

// nodeChecks runs verifyNode in worker goroutines and gathers the problems
// in the order the checks were asked for.
type nodeChecks struct {
	jobs    chan nodeCheck
	wg      sync.WaitGroup
	mu      sync.Mutex
	found   map[int][]Problem
	n       int
	stopped bool
}

type nodeCheck struct {
	k        int
	at       Problem
	id, path string
}

func newNodeChecks(v *Vault, workers int) *nodeChecks {
	nc := &nodeChecks{jobs: make(chan nodeCheck, 64), found: make(map[int][]Problem)}
	for range workers {
		nc.wg.Add(1)
		go func() {
			defer nc.wg.Done()
			for j := range nc.jobs {
				if ps := v.verifyNode(j.at, j.id, j.path); len(ps) > 0 {
					nc.mu.Lock()
					nc.found[j.k] = ps
					nc.mu.Unlock()
				}
			}
		}()
	}
	return nc
}

func (nc *nodeChecks) check(at Problem, id, path string) {
	nc.jobs <- nodeCheck{k: nc.n, at: at, id: id, path: path}
	nc.n++
}

// wait returns the problems once every check is done.
func (nc *nodeChecks) wait() []Problem {
	nc.stop()
	var out []Problem
	for k := range nc.n {
		out = append(out, nc.found[k]...)
	}
	return out
}

func (nc *nodeChecks) stop() {
	if !nc.stopped {
		nc.stopped = true
		close(nc.jobs)
		nc.wg.Wait()
	}
}

// verifyNode checks the node a node.created event names: the file is where
// the event says, its front matter parses and names the same id, and the
// transcript span it cites exists.
func (v *Vault) verifyNode(at Problem, id, rel string) []Problem {
	fail := func(msg string) []Problem {
		p := at
		p.Msg = msg
		return []Problem{p}
	}
	if rel == "" {
		return fail("node.created of " + id + " names no path")
	}
	data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(rel)))
	if err != nil {
		return fail("node " + id + ": " + rel + " is missing")
	}
	n, err := ParseNode(data, true)
	switch {
	case err != nil:
		return fail("node " + rel + ": " + err.Error())
	case n.ID != id:
		return fail("node " + rel + " says id " + n.ID + ", the ledger says " + id)
	case n.Span != nil:
		t := transcript.Ref{Agent: n.Agent, Session: n.Session}
		if t.Path() != n.Span.Path {
			return fail("node " + id + " cites " + n.Span.Path + ", not its session's transcript " + t.Path())
		}
		tail, err := v.TranscriptTail(t)
		if err != nil || tail.last < n.Span.To {
			return fail(fmt.Sprintf("node %s cites messages %d-%d of %s, which has %d", id, n.Span.From, n.Span.To, n.Span.Path, tail.last))
		}
	}
	return nil
}

// nodeIDs collects the ids of the temporal nodes on disk
// (nodes/<agent>/<yyyy>/<mm>/<id>.md), for reference checks.
func (v *Vault) nodeIDs() (map[string]bool, error) {
	ids := make(map[string]bool)
	root := filepath.Join(v.Root, "nodes")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			ids[strings.TrimSuffix(d.Name(), ".md")] = true
		}
		return nil
	})
	if err != nil {
		return nil, fault.IO("read nodes", err)
	}
	return ids, nil
}
