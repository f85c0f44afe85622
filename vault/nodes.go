package vault

// Nodes in the engine: the transaction creates a node (its file, its
// node.created event, its commit trailer), and verify checks the node each
// node.created event names, in workers while the ledger is walked
// (verify.go). The node format and the node index are vault/node's.

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/transcript"
)

// nodePath is where a node lives: nodes/<agent>/<yyyy>/<mm>/<id>.md.
func nodePath(agent, id string, created time.Time) (RelPath, error) {
	created = created.UTC()
	return relPath("node", "nodes", agent, fmt.Sprintf("%04d", created.Year()),
		fmt.Sprintf("%02d", int(created.Month())), id+".md")
}

// CreateNode finalises n (id, path) and queues it: the file, a node.created
// event linking to it, and a Memvault-Node trailer. The id is derived from
// the node's content, so making the same node twice gives the same id; if
// that node exists already, CreateNode returns it and writes nothing.
func (tx *Tx) CreateNode(n *node.Node) (made *node.Node, created bool, err error) {
	if err := fileio.CheckName("agent", n.Agent); err != nil {
		return nil, false, err
	}
	t, err := time.Parse(time.RFC3339Nano, n.Created)
	if err != nil {
		return nil, false, fmt.Errorf("node: created %q: %w", n.Created, err)
	}
	n.Created = FormatTS(t)
	n.ID = ""
	n.Path = ""
	digest := sha256.Sum256(n.Encode()) // Encode leaves Threads and Children non-nil
	n.ID = derivedID("n_", t, digest[:])
	rel, err := nodePath(n.Agent, n.ID, t)
	if err != nil {
		return nil, false, err
	}
	n.Path = rel.String()
	if _, err := tx.v.Files().Stat(tx.v.Abs(rel)); err == nil {
		recorded, err := tx.nodeRecorded(n.ID)
		if err != nil || recorded {
			return n, false, err
		}
		// The file reached the disk but its event did not (the writer was
		// killed in between: the ledger is written last). Record it now,
		// with the file as it is.
		tx.CommitFile(rel)
	} else {
		tx.WriteFile(rel, n.Encode())
	}
	data := n.EventData()
	thread := ""
	if len(n.Threads) > 0 {
		thread = n.Threads[0]
	}
	tx.Append(&Event{Kind: "node.created", Thread: thread, Text: n.Title, Links: []string{n.ID},
		Session: n.Session, Data: data, Source: "distill"})
	tx.nodes = append(tx.nodes, n.ID)
	if tx.subject == "" {
		tx.Subject(n.Kind + ": " + nodeSubject(n))
	}
	if tx.nodeIndex != nil {
		tx.nodeIndex.Add(n)
	}
	return n, true, nil
}

// nodeSubject is a node's title for a commit subject, without the session
// key titles start with ("session <key>: <first prompt>", "compaction of
// <key>: <summary>"): the key is in the Memvault-Session trailer.
func nodeSubject(n *node.Node) string {
	if n.Session != "" {
		if i := strings.Index(n.Title, n.Session+": "); i >= 0 {
			return n.Title[i+len(n.Session)+2:]
		}
	}
	return withoutWord(n.Title, n.Session)
}

// nodeRecorded reports whether the ledger (or this transaction) holds the
// node.created event of node id. Only lines naming the id are decoded.
func (tx *Tx) nodeRecorded(id string) (bool, error) {
	for _, ev := range tx.events {
		if ev.Kind == "node.created" && len(ev.Links) > 0 && ev.Links[0] == id {
			return true, nil
		}
	}
	st, err := tx.v.LoadStateWith([][]byte{[]byte(`"` + id + `"`)})
	if err != nil {
		return false, err
	}
	for _, r := range st.Rows {
		if r.Kind == "node.created" && len(r.Links) > 0 && r.Links[0] == id {
			return true, nil
		}
	}
	return false, nil
}

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
	n, err := node.Parse(data, true)
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
		tail, err := transcript.EndOf(v.Files(), t)
		if err != nil || tail.Last < n.Span.To {
			return fail(fmt.Sprintf("node %s cites messages %d-%d of %s, which has %d", id, n.Span.From, n.Span.To, n.Span.Path, tail.Last))
		}
	}
	return nil
}

// NodeIDs collects the ids of the temporal nodes on disk
// (nodes/<agent>/<yyyy>/<mm>/<id>.md), for reference checks.
func (v *Vault) NodeIDs() (map[string]bool, error) {
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
