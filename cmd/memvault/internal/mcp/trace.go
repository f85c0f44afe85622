package mcp

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// traceClip is how much of a message a trace line shows; the line gives
// the whole size.
const traceClip = 240

// tracer writes a line for every message in and out of the server, and
// for the end of its input and of its session (Options.Trace): the Unix
// time in seconds and the time since the server started, the direction, the size
// and the start of the message. It is for finding where a client's time
// goes (docs/MCP.md, "What a client waits for"); a nil tracer does nothing.
type tracer struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func newTracer(w io.Writer) *tracer {
	if w == nil {
		return nil
	}
	t := &tracer{w: w, start: time.Now()}
	t.event("serving")
	return t
}

// line traces one message: dir is '<' for the client's, '>' for the
// server's.
func (t *tracer) line(dir byte, msg []byte, over bool) {
	if t == nil || (len(msg) == 0 && !over) {
		return
	}
	shown, more := msg, ""
	if len(shown) > traceClip {
		shown, more = shown[:traceClip], "…"
	}
	t.write(fmt.Sprintf("%c %d B %s%s", dir, len(msg), shown, more))
}

// event traces something that is not a message.
func (t *tracer) event(what string) {
	if t != nil {
		t.write("- " + what)
	}
}

func (t *tracer) write(s string) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%.3f %+9.1fms %s\n", float64(now.UnixMicro())/1e6, float64(now.Sub(t.start).Microseconds())/1000, s)
}
