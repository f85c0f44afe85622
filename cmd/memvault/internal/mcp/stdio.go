package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio transport (docs/MCP.md, "Transport"). The server reads one
// JSON-RPC message a line and answers one a line. The SDK's own stdio
// transport ends the session on the first message it cannot decode (an
// invalid line, a batch, a message over its size limit): one bad line
// from a client, or a line torn by a client that died mid-write, would end
// every later call. So the server frames and decodes the lines itself, with
// the SDK's own decoder, and a line that is not one message is answered
// with a JSON-RPC error and passed over:
//
//   - not JSON: parse error (-32700), id null; a message glued to the end
//     of a torn line (a half-written line followed by a whole request with
//     no newline between) is then served (frame.go, gluedMessage);
//   - JSON but not a JSON-RPC message: invalid request (-32600), with the
//     message's id when it has one;
//   - a batch (an array): invalid request, id null: batches were removed
//     from MCP in 2025-06-18 and are refused on every protocol version;
//   - over MaxMessageBytes: invalid request, with the id when it is in the
//     line's first 64 KiB; the rest of the line is read and dropped in a
//     fixed buffer, never held.
//
// The end of a stdio session. A client ends it by closing the server's
// stdin (the protocol's stdio shutdown). The SDK takes the end of its input
// for the end of the session at once, and drops the requests it had read
// but not answered yet: a client that writes a request and closes stdin
// (a harness ending its session, `memvault mcp < requests.jsonl`) would
// lose it, and a write under way would be cut off by the process's exit.
// So the end of stdin is held back until every request read has been
// answered, or drainWait has passed (a client may cancel a request, which
// is then never answered). A subscriptions/listen request (the 2026-07-28
// protocol's stream of notifications) does not hold it back: it is
// answered only when the client cancels it or the session ends, so the end
// of the input is its end. Waiting for it held every Claude Code 2.1
// session's exit until the harness gave up on the server, about four
// seconds later (docs/MCP.md, "What a client waits for").

// drainWait bounds how long the end of stdin waits for the answers.
const drainWait = 30 * time.Second

// pending holds the ids of the requests read from the client that are not
// answered yet. A request whose id is one of them is refused here: the SDK
// would drop it without an answer. Each id says whether the end of the
// input waits for its answer (false: a subscriptions/listen stream).
type pending struct {
	mu      sync.Mutex
	cond    *sync.Cond
	ids     map[jsonrpc.ID]bool
	awaited int // how many of ids the end of the input waits for
}

// listenMethod is the 2026-07-28 protocol's subscription stream, a request
// answered only when it ends.
const listenMethod = "subscriptions/listen"

func newPending() *pending {
	p := &pending{ids: map[jsonrpc.ID]bool{}}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// start counts a request as waiting for its answer, awaited by the end of
// the input or not; false when its id already is.
func (p *pending) start(id jsonrpc.ID, awaited bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.ids[id]; ok {
		return false
	}
	p.ids[id] = awaited
	if awaited {
		p.awaited++
	}
	return true
}

// done counts a request as answered.
func (p *pending) done(id jsonrpc.ID) {
	p.mu.Lock()
	if awaited, ok := p.ids[id]; ok {
		delete(p.ids, id)
		if awaited {
			p.awaited--
		}
	}
	p.mu.Unlock()
	p.cond.Broadcast()
}

// wait returns once every awaited request is answered, or after d.
func (p *pending) wait(d time.Duration) {
	timer := time.AfterFunc(d, func() {
		p.mu.Lock()
		clear(p.ids)
		p.awaited = 0
		p.mu.Unlock()
		p.cond.Broadcast()
	})
	defer timer.Stop()
	p.mu.Lock()
	for p.awaited > 0 {
		p.cond.Wait()
	}
	p.mu.Unlock()
}

// stdioTransport is the server's side of a client on a pair of streams.
type stdioTransport struct {
	in    io.Reader
	out   io.Writer
	trace *tracer // nil: none
}

// Connect starts reading the client's lines.
func (t *stdioTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &stdioConn{out: t.out, trace: t.trace, p: newPending(), incoming: make(chan jsonrpc.Message), closed: make(chan struct{})}
	go c.readLoop(bufio.NewReaderSize(t.in, readBuffer))
	return c, nil
}

// stdioConn is one session's connection (the SDK's Connection).
type stdioConn struct {
	out      io.Writer
	trace    *tracer
	wmu      sync.Mutex // one message a line: writes do not interleave
	p        *pending
	incoming chan jsonrpc.Message // closed at the end of the input
	closed   chan struct{}
	once     sync.Once
}

// readLoop reads the client's lines until the end of its input, sends the
// SDK each message, answers each line that is not one, and closes
// incoming once every request read is answered.
func (c *stdioConn) readLoop(r *bufio.Reader) {
	defer close(c.incoming)
	for {
		line, over, err := nextLine(r)
		c.trace.line('<', line, over)
		if err != nil {
			c.trace.event("end of input")
		}
		if len(line) > 0 || over {
			for _, m := range c.frame(line, over) {
				if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() && !c.p.start(req.ID, req.Method != listenMethod) {
					c.writeError(&lineProblem{code: jsonrpc.CodeInvalidRequest, id: req.ID.Raw(),
						message: "invalid request: the id is the id of a request not answered yet"})
					continue
				}
				select {
				case c.incoming <- m:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			c.p.wait(drainWait)
			return
		}
	}
}

// frame is what one line holds for the SDK: its message, or none when the
// line was answered here (frame.go), or the message glued to its end.
func (c *stdioConn) frame(line []byte, over bool) []jsonrpc.Message {
	msg, problem := decodeLine(line, over)
	switch {
	case problem == nil && msg == nil: // a blank line
		return nil
	case problem == nil:
		return []jsonrpc.Message{msg}
	}
	c.writeError(problem)
	if problem.glued != nil {
		return []jsonrpc.Message{problem.glued}
	}
	return nil
}

// Read returns the client's next message; io.EOF once its input ended and
// every request read was answered.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case m, ok := <-c.incoming:
		if !ok {
			return nil, io.EOF
		}
		return m, nil
	}
}

// Write sends one message, a line; an answer to a request counts it
// answered.
func (c *stdioConn) Write(_ context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	err = c.writeLine(data)
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		c.p.done(resp.ID)
	}
	return err
}

func (c *stdioConn) writeLine(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.out.Write(append(data, '\n'))
	c.trace.line('>', data, false)
	return err
}

// writeError answers a line that is not a message the SDK can take.
func (c *stdioConn) writeError(p *lineProblem) {
	data, err := json.Marshal(errorReply{JSONRPC: "2.0", ID: p.id, Error: replyError{Code: p.code, Message: p.message}})
	if err == nil {
		_ = c.writeLine(data)
	}
}

// errorReply is a JSON-RPC error answer. ID is the request's id (a string
// or a json.Number) or nil, written as null.
type errorReply struct {
	JSONRPC string     `json:"jsonrpc"`
	ID      any        `json:"id"`
	Error   replyError `json:"error"`
}

type replyError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// Close ends the session's reading; the streams are the caller's.
func (c *stdioConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *stdioConn) SessionID() string { return "" }
