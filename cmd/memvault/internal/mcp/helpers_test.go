package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/vaulttest"
)

// The protocol tests run the server and the SDK's own client in process,
// over the SDK's in-memory transports: every request and result crosses
// the wire encoding a real client sees.

// fixture is a vault and a client connected to a server on it.
type fixture struct {
	t      *testing.T
	v      *vault.Vault
	cs     *sdk.ClientSession
	client *sdk.Client
	server *Server
	// updated receives the URI of every resource-updated notification.
	updated chan string
	// listChanged receives each resources/list_changed notification.
	listChanged chan struct{}
}

// setup makes a vault in a temporary folder and connects a client to a
// server on it. The server's working folder is unrelated to the vault, so
// no thread comes from it unless a test says otherwise.
func setup(t *testing.T, opts Options, protocol string) *fixture {
	t.Helper()
	v := testvault.New(t)
	if opts.Vault == "" {
		opts.Vault = v.Root
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	return connect(t, v, opts, protocol, nil)
}

// connect connects a new client, with roots when given, to a server with
// opts; protocol "" is the SDK's latest.
func connect(t *testing.T, v *vault.Vault, opts Options, protocol string, roots []*sdk.Root) *fixture {
	t.Helper()
	f := &fixture{t: t, v: v, updated: make(chan string, 16), listChanged: make(chan struct{}, 16)}
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	f.server = New(opts)
	ss, err := f.server.Connect(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			f.updated <- req.Params.URI
		},
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) {
			f.listChanged <- struct{}{}
		},
	})
	client.AddRoots(roots...)
	f.client = client
	f.cs, err = client.Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.cs.Close() })
	return f
}

// call calls a tool and returns its result, failing on a protocol error.
func (f *fixture) call(name string, args map[string]any) *sdk.CallToolResult {
	f.t.Helper()
	res, err := f.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		f.t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

// ok calls a tool that must succeed and decodes its structured content
// into out; it checks that the text content carries the same JSON.
func (f *fixture) ok(name string, args map[string]any, out any) {
	f.t.Helper()
	res := f.call(name, args)
	if res.IsError {
		f.t.Fatalf("%s %v: failed: %s", name, args, text(res))
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		f.t.Fatal(err)
	}
	if text(res) != string(data) {
		var a, b any
		_ = json.Unmarshal([]byte(text(res)), &a)
		_ = json.Unmarshal(data, &b)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			f.t.Fatalf("%s: text content and structured content differ:\n%s\n%s", name, text(res), data)
		}
	}
	if out != nil {
		reflect.ValueOf(out).Elem().SetZero() // decode into a fresh value, not over the last result
		if err := json.Unmarshal(data, out); err != nil {
			f.t.Fatalf("%s: decode %s: %v", name, data, err)
		}
	}
}

// fails calls a tool that must fail and returns its error's details.
func (f *fixture) fails(name string, args map[string]any) (ToolError, string) {
	f.t.Helper()
	res := f.call(name, args)
	if !res.IsError {
		f.t.Fatalf("%s %v: succeeded, want an error: %s", name, args, text(res))
	}
	if res.StructuredContent != nil {
		f.t.Errorf("%s: a failed call carries structured content %v", name, res.StructuredContent)
	}
	raw, ok := res.Meta[ErrorMetaKey]
	if !ok {
		f.t.Fatalf("%s: no %s in _meta: %v", name, ErrorMetaKey, res.Meta)
	}
	data, _ := json.Marshal(raw)
	var te ToolError
	if err := json.Unmarshal(data, &te); err != nil {
		f.t.Fatal(err)
	}
	msg := text(res)
	if !strings.HasPrefix(msg, "memvault: ") {
		f.t.Errorf("%s: error text %q does not start with memvault:", name, msg)
	}
	if te.Hint != "" && !strings.Contains(msg, "\nhint: "+te.Hint) {
		f.t.Errorf("%s: the text %q does not say the hint %q", name, msg, te.Hint)
	}
	return te, msg
}

// text is a result's text content.
func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// read reads a resource's text.
func (f *fixture) read(uri string) (string, error) {
	f.t.Helper()
	res, err := f.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		return "", err
	}
	if len(res.Contents) != 1 || res.Contents[0].URI != uri {
		f.t.Fatalf("read %s: contents %+v", uri, res.Contents)
	}
	return res.Contents[0].Text, nil
}

// state is the vault's ledger as a fresh open reads it.
func (f *fixture) state() *vault.State {
	f.t.Helper()
	v, err := vault.Open(f.v.Root)
	if err != nil {
		f.t.Fatal(err)
	}
	st, err := v.LoadState()
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

// unchanged fails the test when the vault's files (git's refs and index
// included) differ from before.
func (f *fixture) unchanged(before map[string][]byte) {
	f.t.Helper()
	after := vaulttest.Files(f.t, f.v.Root)
	for p, b := range before {
		if a, ok := after[p]; !ok || !bytes.Equal(a, b) {
			f.t.Errorf("%s changed or vanished", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			f.t.Errorf("%s appeared", p)
		}
	}
}

// Connect serves one client over t and returns at once (the tests' in-memory transports).
func (s *Server) Connect(ctx context.Context, t sdk.Transport) (*sdk.ServerSession, error) {
	return s.sdk.Connect(ctx, t, nil)
}
