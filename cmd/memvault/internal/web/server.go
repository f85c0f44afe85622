// Package web is memvault's web view (`memvault serve`, docs/WEB.md): the
// vault's memory as pages a person reads in a browser on the same machine.
//
// It is a front end beside the command line and the MCP server. Each page
// makes the library calls the matching command makes (through
// cmd/memvault/internal/ops where a command's own logic is shared), so what
// a page shows is what the command prints. Every request opens the vault
// afresh and reads without the lock; the two writes (--write) are one
// transaction each through the command line's calls. The server listens on
// 127.0.0.1 only and answers nobody without its token (auth.go). The
// package prints nothing and picks no exit code.
package web

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options are what the command line resolved from its flags; the package
// reads neither flags nor the environment.
type Options struct {
	// Root is the vault's folder, found once by the command line.
	Root string
	// Agent is the agent that reads and writes; "" is the vault's
	// configured agent.
	Agent string
	// Write turns on the two write routes (--write).
	Write bool
	// Token authorises requests: 64 hex digits (NewToken).
	Token string
	// Binary is memvault's own path, for git's merge driver, which a
	// fresh clone's first write registers (vault.Vault.Binary).
	Binary string
	// LockWait is how long a write waits for the vault lock (0: a second).
	LockWait time.Duration
	// Refresh brings the heads up to date after a write route's commit
	// (hooks/afterwrite.go); the zero value leaves them.
	Refresh hooks.Refresher
}

// Server is the web view of one vault. It keeps nothing between requests
// but its options and its parsed templates.
type Server struct {
	opts  Options
	pages map[string]*template.Template
	csrf  string
}

// New checks opts and parses the pages.
func New(opts Options) (*Server, error) {
	if len(opts.Token) != tokenLen {
		return nil, fault.New(vault.ErrInvalid, "serve: the token must be %d hex digits", tokenLen)
	}
	if opts.LockWait <= 0 {
		opts.LockWait = time.Second
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Server{opts: opts, pages: pages, csrf: csrfToken(opts.Token)}, nil
}

// Handler answers requests that reach the server on port: the Host check
// needs it (auth.go).
func (s *Server) Handler(port int) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page(s.overview))
	mux.HandleFunc("GET /timeline", s.page(s.timeline))
	mux.HandleFunc("GET /sessions", s.page(s.sessions))
	mux.HandleFunc("GET /sessions/{agent}/{session}", s.page(s.session))
	mux.HandleFunc("GET /threads/{kind}/{slug}", s.page(s.thread))
	mux.HandleFunc("GET /nodes/{id}", s.page(s.node))
	mux.HandleFunc("GET /heads/{path...}", s.page(s.head))
	mux.HandleFunc("GET /continuity", s.page(s.continuity))
	mux.HandleFunc("GET /recall", s.page(s.recall))
	mux.HandleFunc("GET /live", s.live)
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	if s.opts.Write {
		mux.HandleFunc("POST /commitments/{id}/close", s.write(s.closeCommitment))
		mux.HandleFunc("POST /heads/resolve", s.write(s.resolveHead))
	}
	// Everything else, any method: the write routes without --write too.
	mux.HandleFunc("/", s.page(func(*http.Request) (*view, error) {
		return nil, fault.New(vault.ErrNotFound, "no such page")
	}))
	return &guard{s: s, port: strconv.Itoa(port), next: mux}
}

// Serve answers requests on ln until ctx ends, then shuts down, letting
// the requests under way finish for a few seconds.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	port := ln.Addr().(*net.TCPAddr).Port
	hs := &http.Server{Handler: s.Handler(port), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// URL is the address a person opens: the server's origin and the token.
func URL(port int, token string) string {
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/?token=" + token
}

// open opens the vault for one request. Pages open it for capture, so a
// vault whose memvault.toml does not parse still shows what is wrong.
func (s *Server) open(capture bool) (*vault.Vault, string, error) {
	openFn := vault.Open
	if capture {
		openFn = vault.OpenForCapture
	}
	v, err := openFn(s.opts.Root)
	if err != nil {
		return nil, "", err
	}
	v.Binary = s.opts.Binary
	// The spool's problems go to the hook log, with those of the hooks that spooled.
	v.Warn = func(line string) { _ = hookstate.AppendHookLog(s.opts.Root, line) }
	agent := s.opts.Agent
	if agent == "" {
		agent = v.Config.Agent
	}
	return v, agent, nil
}
