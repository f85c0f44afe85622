package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/cmd/memvault/internal/web"
	"github.com/memvault/memvault/vault/fileio"
)

type serveOptions struct {
	port  int  // on 127.0.0.1; 0 for a free one
	open  bool // in the platform's browser
	write bool // allow the pages' writes
}

func newServeCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "serve",
		Usage: "show the memory as web pages on 127.0.0.1, for a person to review (read-only unless --write)",
		Description: "Serves the vault's pages on 127.0.0.1 (a free port unless --port) until interrupted: the\n" +
			"overview, the timeline, sessions, nodes and their lineage, the heads with their history\n" +
			"and diffs, CONTINUITY.md's learnings and decisions, and a recall box (docs/WEB.md).\n" +
			"Prints one line, the address to open, which carries the token every request needs.\n" +
			"Each request opens the vault afresh and reads without the lock. --write adds closing a\n" +
			"commitment and resolving a head conflict, each one transaction.",
	}
}

func (o *serveOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.IntFlag{Name: "port", Usage: "listen on this port of 127.0.0.1 (default: a free one)", Destination: &o.port},
		&ucli.BoolFlag{Name: "open", Usage: "open the address in the platform's browser, when there is an opener", Destination: &o.open},
		&ucli.BoolFlag{Name: "write", Usage: "allow closing commitments and resolving head conflicts from the pages", Destination: &o.write},
	}
}

// server is the web server the options and the global flags describe.
func (o serveOptions) server(e env) (web.Options, error) {
	srv := web.Options{Agent: e.agent, Write: o.write, Token: web.NewToken()}
	if o.port < 0 || o.port > 65535 {
		return srv, usagef("serve: --port must be between 0 and 65535")
	}
	if a := srv.Agent; a != "" {
		if err := fileio.CheckName("agent", a); err != nil {
			return srv, err
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return srv, err
	}
	if srv.Root, err = e.findVault(wd); err != nil {
		return srv, err
	}
	srv.Binary, _ = selfPath()
	if srv.Refresh, err = refresher(); err != nil {
		return srv, err
	}
	return srv, nil
}

// runServe serves the pages until SIGINT or SIGTERM. The vault is found
// once, for the address line; each request opens it afresh.
func runServe(ctx context.Context, opts serveOptions, e env) error {
	server, err := opts.server(e)
	if err != nil {
		return err
	}
	srv, err := web.New(server)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.port)))
	if err != nil {
		return fmt.Errorf("serve: listen on 127.0.0.1:%d: %w", opts.port, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	addr := web.URL(port, server.Token)
	fmt.Fprintf(e.stdout, "memvault: serving %s at %s\n", server.Root, addr)
	if opts.open {
		if err := openBrowser(addr); err != nil {
			fmt.Fprintf(e.stderr, "memvault: note: could not open a browser (%v); open the address above\n", err)
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return srv.Serve(ctx, ln)
}

// openBrowser hands addr to the platform's opener, without waiting for it.
func openBrowser(addr string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", addr)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", addr)
	default:
		cmd = exec.Command("xdg-open", addr)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
