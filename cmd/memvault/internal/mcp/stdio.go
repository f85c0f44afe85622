package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// The end of a stdio session. A client ends it by closing the server's
// stdin (the protocol's stdio shutdown). The SDK takes the end of its input
// for the end of the session at once, and drops the requests it had read
// but not answered yet: a client that writes a request and closes stdin
// (a harness ending its session, `memvault mcp < requests.jsonl`) would
// lose it, and a write under way would be cut off by the process's exit.
// So the server's end of stdin is held back until every request read has
// been answered, or drainWait has passed (a client may cancel a request,
// which is then never answered).

// drainWait bounds how long the end of stdin waits for the answers.
const drainWait = 30 * time.Second

// pending counts the requests read from the client that are not answered
// yet, from the messages themselves: a request has a method and an id, an
// answer an id and no method.
type pending struct {
	mu   sync.Mutex
	cond *sync.Cond
	n    int
}

func newPending() *pending {
	p := &pending{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// message is what pending reads of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// count adds the requests in line (one message, or a batch) when in, and
// takes away the answers when out.
func (p *pending) count(line []byte, in bool) {
	line = bytes.TrimSpace(line)
	var msgs []message
	if len(line) > 0 && line[0] == '[' {
		if json.Unmarshal(line, &msgs) != nil {
			return
		}
	} else {
		var m message
		if json.Unmarshal(line, &m) != nil {
			return
		}
		msgs = []message{m}
	}
	delta := 0
	for _, m := range msgs {
		hasID := len(m.ID) > 0 && string(m.ID) != "null"
		switch {
		case in && hasID && m.Method != "":
			delta++
		case !in && hasID && m.Method == "":
			delta--
		}
	}
	if delta == 0 {
		return
	}
	p.mu.Lock()
	p.n = max(p.n+delta, 0)
	p.mu.Unlock()
	p.cond.Broadcast()
}

// wait returns once every request is answered, or after d.
func (p *pending) wait(d time.Duration) {
	timer := time.AfterFunc(d, func() {
		p.mu.Lock()
		p.n = 0
		p.mu.Unlock()
		p.cond.Broadcast()
	})
	defer timer.Stop()
	p.mu.Lock()
	for p.n > 0 {
		p.cond.Wait()
	}
	p.mu.Unlock()
}

// lines splits a stream into lines for fn, keeping a partial one.
type lines struct {
	partial []byte
	fn      func(line []byte)
}

func (l *lines) feed(p []byte) {
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.partial = append(l.partial, p...)
			return
		}
		l.fn(append(l.partial, p[:i]...))
		l.partial = l.partial[:0]
		p = p[i+1:]
	}
}

func (l *lines) flush() {
	if len(l.partial) > 0 {
		l.fn(l.partial)
		l.partial = nil
	}
}

// drainingReader is the client's side of stdin: it counts the requests
// read, and holds the end of the input back until they are answered.
type drainingReader struct {
	r io.Reader
	p *pending
	l lines
}

func newDrainingReader(r io.Reader, p *pending) *drainingReader {
	d := &drainingReader{r: r, p: p}
	d.l.fn = func(line []byte) { p.count(line, true) }
	return d
}

func (d *drainingReader) Read(b []byte) (int, error) {
	n, err := d.r.Read(b)
	d.l.feed(b[:n])
	if err == io.EOF {
		d.l.flush()
		if n > 0 {
			return n, nil // the last bytes first; the end comes with the next read
		}
		d.p.wait(drainWait)
	}
	return n, err
}

// countingWriter is the server's side of stdout: it counts the answers
// written.
type countingWriter struct {
	mu sync.Mutex
	w  io.Writer
	l  lines
}

func newCountingWriter(w io.Writer, p *pending) *countingWriter {
	c := &countingWriter{w: w}
	c.l.fn = func(line []byte) { p.count(line, false) }
	return c
}

func (c *countingWriter) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.w.Write(b)
	c.l.feed(b[:n])
	return n, err
}

func (c *countingWriter) Close() error { return nil }
