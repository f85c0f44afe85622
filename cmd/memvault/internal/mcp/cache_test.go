package mcp

import (
	"context"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestResultsSayHowLongTheyStayFresh: every list and read result carries a
// TTL and the private scope (issue 35: a client without them asks again
// and again in one turn): the static lists for a day, the heads' list for
// a minute, a head read for no time, a node read by its full id for a
// day and by a prefix for no time.
func TestResultsSayHowLongTheyStayFresh(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{}, "")
	ctx := context.Background()
	var w writeOut
	f.ok("remember", map[string]any{"text": "checkout uses the v2 payment API", "kind": "decision", "thread": "project:shop"}, &w)
	node := summarize(t, f.v, "s9", "project:shop", "why is checkout slow", "the payment call was synchronous")

	check := func(what string, c sdk.Cacheable, ttl time.Duration) {
		t.Helper()
		if c.TTLMs != int(ttl.Milliseconds()) || c.CacheScope != "private" {
			t.Errorf("%s: ttlMs %d scope %q, want %d private", what, c.TTLMs, c.CacheScope, ttl.Milliseconds())
		}
	}
	tools, err := f.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("tools/list", tools.Cacheable, staticTTL)
	prompts, err := f.cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("prompts/list", prompts.Cacheable, staticTTL)
	templates, err := f.cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("resources/templates/list", templates.Cacheable, staticTTL)
	list, err := f.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("resources/list", list.Cacheable, listTTL)
	for uri, ttl := range map[string]time.Duration{memoryURI: 0, continuityURI: 0, "memvault://threads/project/shop": 0,
		nodePrefix + node.ID: nodeTTL, nodePrefix + node.ID[:20]: 0} {
		res, err := f.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatal(uri, err)
		}
		check("read "+uri, res.Cacheable, ttl)
	}
}

// TestListChangedAfterANewThread: a write of this server that gives the
// vault a new thread head tells the client the list changed, and the
// client's next list (its cache emptied by the notification) names it; a
// write to a thread already listed sends nothing.
func TestListChangedAfterANewThread(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{}, "")
	ctx := context.Background()
	var w writeOut
	f.ok("remember", map[string]any{"text": "checkout uses the v2 payment API", "kind": "decision", "thread": "project:shop"}, &w)
	// Before the first list, nothing is cached, so nothing is said.
	select {
	case <-f.listChanged:
		t.Fatal("list_changed before the client listed")
	case <-time.After(100 * time.Millisecond):
	}
	uris := func() []string {
		t.Helper()
		list, err := f.cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range list.Resources {
			out = append(out, r.URI)
		}
		return out
	}
	if got := uris(); !slices.Contains(got, "memvault://threads/project/shop") {
		t.Fatalf("first list: %v", got)
	}
	f.ok("remember", map[string]any{"text": "the cart keeps items for a week", "kind": "fact", "thread": "project:cart"}, &w)
	select {
	case <-f.listChanged:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed after a write that added a thread")
	}
	if got := uris(); !slices.Contains(got, "memvault://threads/project/cart") {
		t.Fatalf("the list after list_changed lacks the new thread: %v", got)
	}
	// A write to a listed thread changes no list; a write to a new one
	// after it does, and is the only notification (the SDK sends one 10 ms
	// after the change that asked for it).
	f.ok("remember", map[string]any{"text": "the cart is per device", "kind": "fact", "thread": "project:cart"}, &w)
	select {
	case <-f.listChanged:
		t.Fatal("list_changed after a write to a listed thread")
	case <-time.After(300 * time.Millisecond):
	}
	f.ok("remember", map[string]any{"text": "ship by friday", "kind": "next", "thread": "project:ship"}, &w)
	select {
	case <-f.listChanged:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed after the second new thread")
	}
}
