package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
)

func TestResources(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{}, "")
	ctx := context.Background()
	var w writeOut
	f.ok("remember", map[string]any{"text": "checkout uses the v2 payment API", "kind": "decision", "thread": "project:shop"}, &w)

	list, err := f.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	want := []string{"memvault://CONTINUITY.md", "memvault://MEMORY.md", "memvault://decisions", "memvault://learnings",
		"memvault://threads/project/shop"}
	slices.Sort(uris)
	if !slices.Equal(uris, want) {
		t.Errorf("resources %v, want %v", uris, want)
	}
	templates, err := f.cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tpl []string
	for _, r := range templates.ResourceTemplates {
		tpl = append(tpl, r.URITemplate)
	}
	slices.Sort(tpl)
	if !slices.Equal(tpl, []string{"memvault://nodes/{id}", "memvault://threads/{kind}/{slug}"}) {
		t.Errorf("templates %v", tpl)
	}

	// Heads never written are rendered on the fly, and nothing is written.
	memory, err := f.read(memoryURI)
	if err != nil || !strings.Contains(memory, "checkout uses the v2 payment API") {
		t.Fatalf("MEMORY.md: %v\n%s", err, memory)
	}
	head, err := f.read("memvault://threads/project/shop")
	if err != nil || !strings.Contains(head, "checkout uses the v2 payment API") {
		t.Fatalf("thread head: %v\n%s", err, head)
	}
	if _, err := f.read(continuityURI); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"MEMORY.md", "CONTINUITY.md", "threads/project/shop.md"} {
		if _, err := os.Stat(filepath.Join(f.v.Root, p)); err == nil {
			t.Errorf("reading a resource wrote %s", p)
		}
	}

	node := summarize(t, f.v, "s9", "project:shop", "why is checkout slow", "the payment call was synchronous")
	text, err := f.read("memvault://nodes/" + node.ID)
	if err != nil || !strings.Contains(text, node.ID) || !strings.Contains(text, "why is checkout slow") {
		t.Fatalf("node: %v\n%s", err, text)
	}
	// A prefix names the node too; the contents keep the URI asked for.
	if text2, err := f.read("memvault://nodes/" + node.ID[:20]); err != nil || text2 != text {
		t.Errorf("node by prefix: %v", err)
	}

	for uri, code := range map[string]int64{
		"memvault://threads/project/nope":  sdk.CodeResourceNotFound,
		"memvault://threads/Project/Shop!": jsonrpc.CodeInvalidParams,
		"memvault://nodes/n_01zzzzzzzzzz":  sdk.CodeResourceNotFound,
		"memvault://nodes/e_01zzzzzzzzzz":  jsonrpc.CodeInvalidParams,
		"memvault://elsewhere":             sdk.CodeResourceNotFound,
	} {
		_, err := f.read(uri)
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != code {
			t.Errorf("read %s: %v, want code %d", uri, err, code)
		}
	}
}

func TestNodeResourceIsScopedByAgent(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{Agent: "codex"}, "")
	node := summarize(t, f.v, "s1", "", "a question", "an answer") // the vault's own agent, default
	_, err := f.read("memvault://nodes/" + node.ID)
	var we *jsonrpc.Error
	if !errors.As(err, &we) || !strings.Contains(we.Message, "belongs to agent default") || !strings.Contains(string(we.Data), `"conflict"`) {
		t.Errorf("another agent's node: %v", err)
	}
}

// TestHeadNotifications subscribes to heads and checks that a write tells
// the subscriber of each head whose text it changed, and of no other. What
// was not notified is proved by a sentinel: a head changed last, whose
// notification comes after every earlier one (the SDK hands a client its
// notifications in order).
func TestHeadNotifications(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{}, "2025-11-25")
	ctx := context.Background()
	var w writeOut
	f.ok("remember", map[string]any{"text": "blog posts are markdown", "thread": "project:blog"}, &w)
	const sentinel = "memvault://threads/topic/sentinel"
	for _, uri := range []string{continuityURI, "memvault://threads/project/blog", "memvault://threads/project/shop", sentinel} {
		if err := f.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	n := 0
	notified := func(do func()) []string {
		t.Helper()
		do()
		n++
		f.ok("remember", map[string]any{"text": fmt.Sprintf("sentinel decision %d", n), "kind": "decision",
			"thread": "topic:sentinel"}, &w)
		var got []string
		for {
			select {
			case uri := <-f.updated:
				if uri == sentinel {
					return got
				}
				got = append(got, uri)
			case <-time.After(10 * time.Second):
				t.Fatalf("the sentinel's notification never came; got %v", got)
			}
		}
	}
	var res continuity.ContinuityResult
	got := notified(func() {
		f.ok("next", map[string]any{"text": "rename the shop's checkout", "thread": "project:shop"}, &res)
	})
	slices.Sort(got)
	if !slices.Equal(got, []string{continuityURI, "memvault://threads/project/shop"}) {
		t.Errorf("after next in project:shop: notified %v", got)
	}
	// A read tells nothing; nor does a write that changes no subscribed head.
	got = notified(func() {
		var rec recallOut
		f.ok("recall", map[string]any{"query": "checkout", "all_threads": true}, &rec)
		f.ok("remember", map[string]any{"text": "a fact of her own", "thread": "person:alice"}, &w)
	})
	if len(got) != 0 {
		t.Errorf("notified %v without a change to a subscribed head", got)
	}
	if err := f.cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: continuityURI}); err != nil {
		t.Fatal(err)
	}
	got = notified(func() {
		f.ok("next", map[string]any{"text": "one more thing", "thread": "project:blog"}, &res)
	})
	if !slices.Equal(got, []string{"memvault://threads/project/blog"}) {
		t.Errorf("after unsubscribing CONTINUITY.md: notified %v", got)
	}
}

// TestHeadNotificationsNewProtocol: on the 2026-07-28 protocol a client
// subscribes with a stream of its own (subscriptions/listen), which the
// server takes in as it comes; once it has, a write is notified.
func TestHeadNotificationsNewProtocol(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{}, "")
	if err := f.cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: continuityURI}); err != nil {
		t.Fatal(err)
	}
	for range 1000 { // the subscription travels on its own request
		f.server.mu.Lock()
		_, ok := f.server.watched[continuityURI]
		f.server.mu.Unlock()
		if ok {
			break
		}
		time.Sleep(time.Millisecond)
	}
	var res continuity.ContinuityResult
	f.ok("next", map[string]any{"text": "write the docs"}, &res)
	select {
	case uri := <-f.updated:
		if uri != continuityURI {
			t.Errorf("notified %s", uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notification of CONTINUITY.md")
	}
}

func TestCatchUpPrompt(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{Thread: "project:shop"}, "")
	ctx := context.Background()
	var w writeOut
	f.ok("remember", map[string]any{"text": "prices are stored in cents", "kind": "decision"}, &w)
	f.ok("commitment_open", map[string]any{"text": "migrate the old orders"}, &w)
	list, err := f.cs.ListPrompts(ctx, nil)
	if err != nil || len(list.Prompts) != 1 || list.Prompts[0].Name != "catch_up" {
		t.Fatalf("prompts %+v %v", list, err)
	}
	res, err := f.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "catch_up"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || res.Messages[0].Role != "user" {
		t.Fatalf("messages %+v", res.Messages)
	}
	msg := res.Messages[0].Content.(*sdk.TextContent).Text
	for _, want := range []string{"Catch me up on thread project:shop", "prices are stored in cents",
		"migrate the old orders", w.Event.ID, "# Latest events of project:shop"} {
		if !strings.Contains(msg, want) {
			t.Errorf("catch_up lacks %q:\n%s", want, msg)
		}
	}
	res, err = f.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "catch_up", Arguments: map[string]string{"thread": "project:other"}})
	if err != nil {
		t.Fatal(err)
	}
	if msg := res.Messages[0].Content.(*sdk.TextContent).Text; !strings.Contains(msg, "project:other") || strings.Contains(msg, "migrate the old orders") {
		t.Errorf("catch_up of another thread:\n%s", msg)
	}
	_, err = f.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "catch_up", Arguments: map[string]string{"thread": "not a thread"}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("catch_up of a malformed thread: %v", err)
	}
}

// TestScopeFromRoots: the thread comes from the client's root when the
// project holds the vault, from the process's folder without roots, and
// the session's thread (MEMVAULT_THREAD) wins over both.
func TestScopeFromRoots(t *testing.T) {
	t.Parallel()
	project := filepath.Join(t.TempDir(), "shop")
	v, _, err := vault.Init(filepath.Join(project, vault.DirName))
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	root := []*sdk.Root{{URI: "file://" + project, Name: "shop"}}

	// A client with roots, on a protocol that lets the server ask: the
	// vault is found from the root, and the thread is the project's.
	f := connect(t, v, Options{Dir: elsewhere}, "2025-11-25", root)
	var w writeOut
	f.ok("remember", map[string]any{"text": "from the root"}, &w)
	if w.Event.Thread != "project:shop" {
		t.Errorf("with the client's root: thread %q", w.Event.Thread)
	}
	// The client's roots change: the server asks again, and looks for the
	// vault from the new root, which has none.
	f.client.RemoveRoots(root[0].URI)
	f.client.AddRoots(&sdk.Root{URI: "file://" + elsewhere})
	te, msg := f.fails("remember", map[string]any{"text": "after the roots changed"})
	if te.Class != "not_found" || !strings.Contains(msg, elsewhere) {
		t.Errorf("after the roots changed: %+v %q", te, msg)
	}
	// The working folder without roots: the same rule.
	f = connect(t, v, Options{Dir: filepath.Join(project, "api")}, "", nil)
	f.ok("remember", map[string]any{"text": "from the folder"}, &w)
	if w.Event.Thread != "project:shop" {
		t.Errorf("from the working folder: thread %q", w.Event.Thread)
	}
	// An unrelated folder and an explicit vault: no thread of that folder.
	f = connect(t, v, Options{Dir: elsewhere, Vault: v.Root}, "", nil)
	f.ok("remember", map[string]any{"text": "from nowhere"}, &w)
	if w.Event.Thread != "" {
		t.Errorf("from an unrelated folder: thread %q", w.Event.Thread)
	}
	// The session's thread wins; an argument wins over it; global wins.
	f = connect(t, v, Options{Dir: elsewhere, Vault: v.Root, Thread: "topic:release"}, "2025-11-25", root)
	f.ok("remember", map[string]any{"text": "the session's"}, &w)
	if w.Event.Thread != "topic:release" {
		t.Errorf("the session's thread: %q", w.Event.Thread)
	}
	f.ok("remember", map[string]any{"text": "named", "thread": "person:alice"}, &w)
	if w.Event.Thread != "person:alice" {
		t.Errorf("a named thread: %q", w.Event.Thread)
	}
	f.ok("remember", map[string]any{"text": "global", "global": true}, &w)
	if w.Event.Thread != "" {
		t.Errorf("global: %q", w.Event.Thread)
	}
	// recall searches the current thread: the root's.
	f = connect(t, v, Options{Dir: elsewhere}, "2025-11-25", root)
	var rec recallOut
	f.ok("recall", map[string]any{"query": "from the root"}, &rec)
	if !slices.Contains(rec.Scope, "project:shop") {
		t.Errorf("recall's scope %v", rec.Scope)
	}
}
