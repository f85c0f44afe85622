package mcp

import (
	"context"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
)

// How long what the server lists and reads stays fresh in a client's
// cache (the 2026-07-28 protocol's ttlMs and cacheScope; docs/MCP.md,
// "Freshness"). A client that caches asks again only when a result has
// aged past its TTL or the server said it changed: without a TTL, Claude
// Code asks for resources/list again several times in one turn.
const (
	// staticTTL: the tools, the prompts, the resource templates and the
	// server's description are fixed for the life of the process.
	staticTTL = 24 * time.Hour
	// listTTL: the list of heads grows when a thread is first written to.
	// This server says so at once after its own writes
	// (notifications/resources/list_changed); a thread another process
	// starts shows in the list within this time.
	listTTL = time.Minute
	// nodeTTL: a node's file never changes once written, so a read by its
	// full id is fresh for as long as a client cares to keep it.
	nodeTTL = 24 * time.Hour
)

// cacheScope: the results are this person's memory, for their own client
// only.
const cacheScope = "private"

// cacheable sets the freshness of each result the SDK builds: the static
// lists and a node read by its full id for long, a head read for no time
// (a head changes with every write of any process, and only this server's
// own writes are notified).
func cacheable(_ context.Context, req sdk.Request, c *sdk.Cacheable) {
	c.CacheScope = cacheScope
	switch r := req.(type) {
	case *sdk.ListToolsRequest, *sdk.ListPromptsRequest, *sdk.ListResourceTemplatesRequest, *sdk.ServerRequest[*sdk.DiscoverParams]:
		c.TTLMs = int(staticTTL.Milliseconds())
	case *sdk.ReadResourceRequest:
		c.TTLMs = 0
		if id, ok := strings.CutPrefix(r.Params.URI, nodePrefix); ok && isFullNodeID(id) {
			c.TTLMs = int(nodeTTL.Milliseconds())
		}
	}
}

// isFullNodeID reports whether id is a whole node id (n_ and 26
// characters), not a prefix, which a later node could make ambiguous.
func isFullNodeID(id string) bool { return len(id) == 28 && strings.HasPrefix(id, "n_") }

// listCacheable is the freshness of resources/list, which the server
// answers itself (listResources).
func listCacheable() sdk.Cacheable {
	return sdk.Cacheable{TTLMs: int(listTTL.Milliseconds()), CacheScope: cacheScope}
}

// noteListed keeps the thread heads a list named, so that a write that
// adds one can say the list changed.
func (s *Server) noteListed(keys []string) {
	s.mu.Lock()
	s.listed = keys
	s.mu.Unlock()
}

// notifyListChanged tells the clients that the list of resources changed
// when a write of this server gave the vault a thread head the last list
// did not name. Nothing is sent before the first list: a client that has
// not listed has nothing cached.
func (s *Server) notifyListChanged(ctx context.Context, ss *sdk.ServerSession) {
	s.mu.Lock()
	listed := s.listed
	s.mu.Unlock()
	if listed == nil {
		return
	}
	c, err := s.open(ctx, ss, false)
	if err != nil {
		return
	}
	info, err := heads.Heads(c.v)
	if err != nil {
		return
	}
	keys := listedThreads(info)
	if slices.Equal(keys, listed) {
		return
	}
	s.noteListed(keys)
	// The SDK sends notifications/resources/list_changed when a resource
	// is added: adding MEMORY.md again, with the same handler, changes
	// nothing else.
	s.addMemoryResource()
}

// listedThreads are the threads whose heads resources/list names, in its
// order.
func listedThreads(info *heads.HeadsInfo) []string {
	keys := []string{}
	for _, t := range info.Threads {
		if _, err := vault.ParseThread(t.Key); err == nil {
			keys = append(keys, t.Key)
		}
	}
	return keys
}
