// Package mcp is memvault's MCP server (`memvault mcp`): the vault's memory
// as tools, resources and a prompt over the Model Context Protocol, for any
// harness that speaks it, on the official Go SDK.
//
// It is a front end beside the command line. Each tool makes the library
// calls the matching command makes (through cmd/memvault/internal/ops where
// a command's own logic is shared), so the validation, redaction, events and
// commits are the command line's. One process serves one agent session over
// stdio; nothing runs between calls. Every call finds and opens the vault
// afresh and holds its lock only inside a write, waiting for it briefly: a
// busy vault is a retryable tool error, never a hang. The package prints
// nothing and picks no exit code (docs/MCP.md).
package mcp

import (
	"context"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
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
}

// Server is memvault's MCP server. Its state is what a session learns as it
// goes: the client's roots, and the heads a client subscribed to with the
// text it last saw of each.
type Server struct {
	opts Options
	sdk  *sdk.Server

	mu      sync.Mutex
	roots   map[*sdk.ServerSession]string // the folder of each session's first file root; "" for none
	watched map[string]string             // subscribed head URI → fingerprint of its text when last told
}

// New builds the server with every tool, resource and prompt.
func New(opts Options) *Server {
	if opts.LockWait <= 0 {
		opts.LockWait = DefaultLockWait
	}
	s := &Server{opts: opts, roots: map[*sdk.ServerSession]string{}, watched: map[string]string{}}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "memvault", Title: "memvault", Version: opts.Version},
		&sdk.ServerOptions{
			Instructions: instructions,
			// No logging capability: the server says what it has to say
			// in its results.
			Capabilities:            &sdk.ServerCapabilities{},
			RootsListChangedHandler: s.rootsChanged,
			SubscribeHandler:        s.subscribe,
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

// Run serves one client over t until it disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error { return s.sdk.Run(ctx, t) }

// Connect serves one client over t and returns at once (tests).
func (s *Server) Connect(ctx context.Context, t sdk.Transport) (*sdk.ServerSession, error) {
	return s.sdk.Connect(ctx, t, nil)
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
		return nil, err
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
	agent := s.opts.Agent
	if agent == "" {
		agent = v.Config.Agent
	} else if err := vault.CheckName("agent", agent); err != nil {
		return nil, err
	}
	return &call{v: v, agent: agent, dir: dir}, nil
}

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

// txOptions are the options of a write made for a tool.
func (s *Server) txOptions(c *call, tool string) vault.TxOptions {
	return vault.TxOptions{Command: "mcp " + tool, Agent: c.agent, Session: s.opts.Session,
		Harness: s.opts.Harness, LockTimeout: s.opts.LockWait}
}

// workDir is the folder a session works in: the client's first file root
// when it declares roots, else the process's working folder. The roots are
// asked once per session and again after the client says they changed.
func (s *Server) workDir(ctx context.Context, ss *sdk.ServerSession) string {
	if ss == nil {
		return s.opts.Dir
	}
	s.mu.Lock()
	dir, known := s.roots[ss]
	s.mu.Unlock()
	if !known {
		dir = askRoots(ctx, ss)
		s.mu.Lock()
		s.roots[ss] = dir
		s.mu.Unlock()
	}
	if dir == "" {
		return s.opts.Dir
	}
	return dir
}

// askRoots returns the folder of the client's first file:// root, or ""
// when it has none, cannot be asked (a client without roots, or a session
// on a protocol without server requests: the SDK refuses at once), or does
// not answer in time. The client is asked whatever its capabilities say:
// the SDK does not keep whether a client declared roots without
// listChanged, and one that has no roots answers with an error.
func askRoots(ctx context.Context, ss *sdk.ServerSession) string {
	ctx, cancel := context.WithTimeout(ctx, rootsWait)
	defer cancel()
	res, err := ss.ListRoots(ctx, nil) //nolint:staticcheck // deprecated in 2026-07-28, the way older clients name their folder
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
