// Package mcp is memvault's MCP server (`memvault mcp`): the vault's memory
// as tools, resources and a prompt over the Model Context Protocol, for any
// harness that speaks it, on the official Go SDK.
//
// It is a front end beside the command line. Each tool makes the library
// calls the matching command makes (through cmd/memvault/internal/ops where
// a command's own logic is shared), so the validation, redaction, events and
// commits are the command line's. One process serves one agent session over
// stdio; nothing runs between calls. Every call finds and opens the vault
// afresh and holds its lock only inside a write; the server's writes queue
// for each other in the process, and the one at the head waits for the
// lock briefly: a vault another process keeps busy is a retryable tool
// error, never a hang. The package prints
// nothing and picks no exit code (docs/MCP.md).
package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fileio"
)

// DefaultLockWait is how long a write waits for the vault lock before the
// tool answers that the vault is busy. A model waits on every call, and a
// writer holds the lock for tens of milliseconds: a second is plenty for a
// queue of them, and short enough that a stuck holder costs one retry.
const DefaultLockWait = time.Second

// rootsWait bounds the question a tool call asks the client about its
// roots, so that a client that never answers costs a call a moment, not
// the call.
const rootsWait = 2 * time.Second

// Options are what the command line resolved from its flags and the
// environment; the package reads neither.
type Options struct {
	// Vault is the vault folder (--vault, MEMVAULT_DIR); "" finds the
	// nearest .memory/ upward from the working folder.
	Vault string
	// Agent is the agent that reads and writes (--agent, MEMVAULT_AGENT);
	// "" is the vault's configured agent.
	Agent string
	// Thread is the session's thread (MEMVAULT_THREAD): it wins over the
	// working folder's, as it does for the hooks and the command line.
	Thread string
	// Session and Harness label the writes (MEMVAULT_SESSION,
	// MEMVAULT_HARNESS), as the command line's --session and --harness do.
	Session, Harness string
	// Dir is the process's working folder: where the vault and the thread
	// are found when the client names no root.
	Dir string
	// LockWait is how long a write waits for the vault lock (0:
	// DefaultLockWait).
	LockWait time.Duration
	// Version is reported to the client as the server's.
	Version string
	// Binary is memvault's own path, for git's merge driver, which a fresh
	// clone's first write registers (vault.Vault.Binary).
	Binary string
	// Refresh brings the heads up to date after each write tool's commit
	// (hooks/afterwrite.go); the zero value leaves them.
	Refresh hooks.Refresher
	// Trace, when set, gets a line for every message in and out, with
	// the time since the server started (MEMVAULT_MCP_TRACE; docs/MCP.md,
	// "What a client waits for").
	Trace io.Writer
}

// Server is memvault's MCP server. Its state is what a session learns as it
// goes: the client's roots, and the heads a client subscribed to with the
// text it last saw of each.
type Server struct {
	opts Options
	sdk  *sdk.Server

	// writes queues the server's own writes, one at a time (queueWrite).
	writes chan struct{}

	mu      sync.Mutex
	roots   map[*sdk.ServerSession]*rootsAnswer
	watched map[string]string // subscribed head URI → fingerprint of its text when last told
	listed  []string          // the thread heads the last resources/list named (nil: never listed)
}

// New builds the server with every tool, resource and prompt.
func New(opts Options) *Server {
	if opts.LockWait <= 0 {
		opts.LockWait = DefaultLockWait
	}
	if opts.Version == "" {
		opts.Version = "devel"
	}
	s := &Server{opts: opts, writes: make(chan struct{}, 1), roots: map[*sdk.ServerSession]*rootsAnswer{},
		watched: map[string]string{}}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "memvault", Title: "memvault", Version: opts.Version},
		&sdk.ServerOptions{
			Instructions: instructions,
			// No logging capability: the server says what it has to say
			// in its results.
			Capabilities:            &sdk.ServerCapabilities{},
			RootsListChangedHandler: s.rootsChanged,
			SubscribeHandler:        s.subscribe,
			SetCacheable:            cacheable,
			UnsubscribeHandler:      s.unsubscribe,
		})
	s.addTools()
	s.addResources()
	s.addPrompts()
	return s
}

// instructions is what a client may show its model about the server.
const instructions = "memvault is this project's memory: decisions, facts, commitments, learnings, " +
	"session summaries and transcripts, in a git repository of files. Call recall before re-deciding " +
	"or re-investigating; record decisions, learnings, commitments and next actions as you make them. " +
	"Ids are e_… (events) and n_… (nodes, which expand drills into); any unique prefix of one will do."

// Serve serves one client that writes its requests to in and reads the
// answers from out, one JSON-RPC message a line (the stdio transport), until
// it closes in and every request it sent is answered (stdio.go), or ctx
// ends. A client that goes away is the end of the session, not an error.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	trace := newTracer(s.opts.Trace)
	err := s.sdk.Run(ctx, &stdioTransport{in: in, out: out, trace: trace})
	trace.event("session ended")
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || errors.Is(err, sdk.ErrConnectionClosed) {
		return nil
	}
	return fmt.Errorf("mcp: %w", err)
}

// call is one request's view of the vault: opened for it, by the agent,
// from the folder the session works in.
type call struct {
	v     *vault.Vault
	agent string
	dir   string
}

// open finds and opens the vault for one request. capture opens a vault
// whose memvault.toml does not parse, for the reads that report health.
func (s *Server) open(ctx context.Context, ss *sdk.ServerSession, capture bool) (*call, error) {
	dir := s.workDir(ctx, ss)
	root, err := vault.Find(s.opts.Vault, dir)
	if err != nil {
		return nil, noVault{err}
	}
	open := vault.Open
	if capture {
		open = vault.OpenForCapture
	}
	v, err := open(root)
	if err != nil {
		return nil, err
	}
	v.Binary = s.opts.Binary
	// The spool's problems go to the hook log, with those of the hooks that spooled.
	v.Warn = func(line string) { _ = hookstate.AppendHookLog(root, line) }
	agent := s.opts.Agent
	if agent == "" {
		agent = v.Config.Agent
	} else if err := fileio.CheckName("agent", agent); err != nil {
		return nil, err
	}
	return &call{v: v, agent: agent, dir: dir}, nil
}

// errNoVault marks a request that found no vault to open.
var errNoVault = errors.New("no vault")

// noVault is vault.Find's error, marked as errNoVault.
type noVault struct{ error }

func (e noVault) Unwrap() []error { return []error{e.error, errNoVault} }

// thread is the thread a request works in (docs/MCP.md, "Scope"): none
// when global; the thread it names; else the session's (Options.Thread);
// else the working folder's, by the rule the hooks and the command line
// share (ops.CurrentThread).
func (s *Server) thread(c *call, named string, global bool) (string, error) {
	if global {
		return "", nil
	}
	if named == "" {
		named = s.opts.Thread
	}
	t, _, err := ops.CurrentThread(c.v, named, c.dir)
	return t, err
}

// queueWrite waits for the server's earlier writes to finish. A client may
// send many calls at once, and the SDK runs them at once: left to the
// vault lock, they would wait --lock-wait for each other, and a queue of
// them longer than that would answer busy naming the server's own process.
// So the server's writes queue here, for as long as the queue takes (or
// until the call is cancelled), and only a write at the head of it waits
// for the vault lock, which only another process can then hold: busy
// names another process. release lets the next write go.
func (s *Server) queueWrite(ctx context.Context) (release func(), err error) {
	select {
	case s.writes <- struct{}{}:
		return func() { <-s.writes }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// txOptions are the options of a write made for a tool.
func (s *Server) txOptions(c *call, tool string) vault.TxOptions {
	return vault.TxOptions{Command: "mcp " + tool, Agent: c.agent, Session: s.opts.Session,
		Harness: s.opts.Harness, LockTimeout: s.opts.LockWait, Source: "mcp"}
}

// rootsAnswer is what a session's client said of its roots: the folder of
// its first file root, "" for none. Asked once, by the first call that
// needs it; calls meanwhile wait for the same answer.
type rootsAnswer struct {
	once sync.Once
	dir  string
}

// workDir is the folder a session works in: the client's first file root
// when it has roots, else the process's working folder. The roots are asked
// once per session and again after the client says they changed.
func (s *Server) workDir(ctx context.Context, ss *sdk.ServerSession) string {
	if ss == nil {
		return s.opts.Dir
	}
	s.mu.Lock()
	ans := s.roots[ss]
	if ans == nil {
		ans = &rootsAnswer{}
		s.roots[ss] = ans
	}
	s.mu.Unlock()
	ans.once.Do(func() { ans.dir = askRoots(ctx, ss) })
	if ans.dir == "" {
		return s.opts.Dir
	}
	return ans.dir
}

// askRoots returns the folder of the client's first file:// root, or ""
// when it declared no roots, cannot be asked (a session on a protocol
// without server requests: the SDK refuses at once), or does not answer in
// time.
func askRoots(ctx context.Context, ss *sdk.ServerSession) string {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.RootsV2 == nil { //nolint:staticcheck // roots: how clients before 2026-07-28 name their folder
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, rootsWait)
	defer cancel()
	res, err := ss.ListRoots(ctx, nil) //nolint:staticcheck // as above
	if err != nil {
		return ""
	}
	for _, r := range res.Roots {
		u, err := url.Parse(r.URI)
		if err == nil && u.Scheme == "file" && filepath.IsAbs(u.Path) {
			return filepath.Clean(u.Path)
		}
	}
	return ""
}

// rootsChanged forgets a session's roots, so the next call asks again.
func (s *Server) rootsChanged(_ context.Context, req *sdk.RootsListChangedRequest) {
	s.mu.Lock()
	delete(s.roots, req.Session)
	s.mu.Unlock()
}
