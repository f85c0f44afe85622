package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/node"
)

// Resources, under the memvault:// scheme (docs/MCP.md, "Resources"):
//
//	memvault://MEMORY.md                the global head
//	memvault://CONTINUITY.md            the working memory
//	memvault://learnings                the learnings in scope (continuity learnings)
//	memvault://decisions                the decisions in scope (continuity decisions)
//	memvault://threads/{kind}/{slug}    a thread's head (threads/<kind>/<slug>.md)
//	memvault://nodes/{id}               a temporal node's file, by id or unique prefix
//
// A head reads as this session's agent is shown it at session start: the
// file when it is current, else the render of the ledger merged with the
// file's hand edits, as a refresh would leave it; a head never written is
// rendered on the fly. Reading writes nothing.

const (
	uriScheme     = "memvault://"
	memoryURI     = uriScheme + vault.MemoryHead
	continuityURI = uriScheme + vault.ContinuityHead
	learningsURI  = uriScheme + "learnings"
	decisionsURI  = uriScheme + "decisions"
	threadPrefix  = uriScheme + "threads/"
	nodePrefix    = uriScheme + "nodes/"
	markdown      = "text/markdown"
)

func (s *Server) addResources() {
	s.addMemoryResource()
	s.sdk.AddResource(&sdk.Resource{URI: continuityURI, Name: "CONTINUITY.md", Title: "CONTINUITY.md: the working memory",
		Description: "The scratchpad: active goal, current task, just completed, next actions, blockers, key decisions, learnings.",
		MIMEType:    markdown}, s.readHead)
	for _, r := range protocolLists() {
		s.sdk.AddResource(r, s.readProtocolList)
	}
	s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: threadPrefix + "{kind}/{slug}", Name: "thread-head",
		Title:       "A thread's head",
		Description: "Tier 2: the rolling summary of one thread (kind:slug): status, decisions, open loops, next action, lineage.",
		MIMEType:    markdown}, s.readHead)
	s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: nodePrefix + "{id}", Name: "node",
		Title:       "A temporal node",
		Description: "Tier 3: a session summary, compaction or condensed node (front matter and body), by id or unique prefix.",
		MIMEType:    markdown}, s.readNode)
	// The list names every thread's head, which only the vault knows: the
	// list is answered from it at each request rather than registered once.
	s.sdk.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "resources/list" {
				if r, ok := req.(*sdk.ListResourcesRequest); ok {
					return s.listResources(ctx, r)
				}
			}
			return next(ctx, method, req)
		}
	})
}

// addMemoryResource registers MEMORY.md; registering it again is how the
// server sends notifications/resources/list_changed (notifyListChanged).
func (s *Server) addMemoryResource() {
	s.sdk.AddResource(&sdk.Resource{URI: memoryURI, Name: "MEMORY.md", Title: "MEMORY.md: the global head",
		Description: "Tier 1: the highest-priority state across threads (commitments, blockers, next actions, constraints, node ids to drill into).",
		MIMEType:    markdown}, s.readHead)
}

// listResources lists MEMORY.md, CONTINUITY.md, the learnings, the
// decisions and the head of every thread
// the vault knows; without a vault, the first two (reading them says why).
func (s *Server) listResources(ctx context.Context, req *sdk.ListResourcesRequest) (*sdk.ListResourcesResult, error) {
	list := []*sdk.Resource{
		{URI: memoryURI, Name: "MEMORY.md", Title: "MEMORY.md: the global head", MIMEType: markdown},
		{URI: continuityURI, Name: "CONTINUITY.md", Title: "CONTINUITY.md: the working memory", MIMEType: markdown},
	}
	for _, r := range protocolLists() {
		list = append(list, &sdk.Resource{URI: r.URI, Name: r.Name, Title: r.Title, MIMEType: r.MIMEType})
	}
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return &sdk.ListResourcesResult{Resources: list, Cacheable: listCacheable()}, nil
	}
	info, err := heads.Heads(c.v)
	if err != nil {
		return nil, resourceError(err)
	}
	for _, t := range info.Threads {
		th, err := vault.ParseThread(t.Key)
		if err != nil {
			continue
		}
		list = append(list, &sdk.Resource{URI: threadURI(th), Name: t.Key, Title: "thread head " + t.Key,
			Description: "head " + t.HeadState + "; " + t.Head, MIMEType: markdown})
	}
	s.noteListed(listedThreads(info))
	return &sdk.ListResourcesResult{Resources: list, Cacheable: listCacheable()}, nil
}

// threadURI is the resource of a thread's head.
func threadURI(th vault.Thread) string { return threadPrefix + th.Kind + "/" + th.Slug }

// headOf is the head a resource URI names: MEMORY.md, CONTINUITY.md or a
// thread head's path, and the thread.
func headOf(uri string) (head string, th vault.Thread, err error) {
	switch uri {
	case memoryURI:
		return vault.MemoryHead, th, nil
	case continuityURI:
		return vault.ContinuityHead, th, nil
	}
	rest, ok := strings.CutPrefix(uri, threadPrefix)
	kind, slug, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		return "", th, fault.New(vault.ErrNotFound, "resource %s: no such resource", uri)
	}
	if th, err = vault.ParseThread(kind + ":" + slug); err != nil {
		return "", th, err
	}
	return th.HeadPath().String(), th, nil
}

func (s *Server) readHead(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	head, th, err := headOf(uri)
	if err != nil {
		return nil, resourceError(err)
	}
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return nil, resourceError(err)
	}
	text, err := headText(c, head, th)
	if err != nil {
		return nil, resourceError(err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: markdown, Text: string(text)}}}, nil
}

// headText is a head as the call's agent is shown it; a head never written
// is rendered without writing it.
func headText(c *call, head string, th vault.Thread) ([]byte, error) {
	texts, err := continuity.AgentHeads(c.v, c.agent, head)
	if err != nil {
		return nil, err
	}
	if texts[0] != nil {
		return texts[0], nil
	}
	if head == vault.ContinuityHead {
		doc, err := continuity.RenderContinuity(c.v)
		if err != nil {
			return nil, err
		}
		return doc.Bytes, nil
	}
	opts := heads.RenderOptions{Memory: head == vault.MemoryHead}
	if !opts.Memory {
		opts.Threads = []vault.Thread{th}
	}
	docs, err := heads.RenderHeads(c.v, opts)
	if err != nil {
		return nil, err
	}
	return docs[0].Bytes, nil
}

func (s *Server) readNode(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	arg, _ := strings.CutPrefix(uri, nodePrefix)
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return nil, resourceError(err)
	}
	id, err := c.v.ResolveNodeID("read", arg)
	if err != nil {
		return nil, resourceError(err)
	}
	ix, err := node.Load(c.v.Files())
	if err != nil {
		return nil, resourceError(err)
	}
	n := ix.Nodes[id]
	if n == nil {
		return nil, resourceError(fault.New(vault.ErrNotFound, "read %s: no such node", id))
	}
	// Nodes are scoped by agent, as expand scopes them; a resource has no
	// way to name another agent, so another agent's node is refused here
	// and read with the expand tool's agent argument.
	if n.Agent != c.agent {
		e := fault.New(vault.ErrConflict, "read %s: belongs to agent %s, not %s", id, n.Agent, c.agent)
		return nil, resourceError(e.WithHint("call the expand tool with id %s and agent %s", id, n.Agent))
	}
	data, err := c.v.ReadFile(n.Path)
	if err != nil {
		return nil, resourceError(fault.IO("read "+n.Path, err))
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: markdown, Text: string(data)}}}, nil
}

// resourceError is a failed read as a JSON-RPC error: resource not found
// for a URI that names nothing, invalid parameters for a malformed one,
// else an internal error; its data carries the class and the hint as a
// failed tool's _meta does.
func resourceError(err error) error {
	te := Classify(err)
	code := int64(jsonrpc.CodeInternalError)
	switch te.Class {
	case "not_found":
		code = sdk.CodeResourceNotFound
	case "invalid":
		code = jsonrpc.CodeInvalidParams
	}
	data, _ := json.Marshal(te)
	return &jsonrpc.Error{Code: code, Message: "memvault: " + err.Error(), Data: data}
}

// Change notifications. A client that subscribes to a head is told when its
// text changed after a write this server made (the head as readHead gives
// it, fingerprinted when subscribed and after each write): CONTINUITY.md
// after next, done, decide or learn; memvault://learnings and
// memvault://decisions after learn, decide or audit; MEMORY.md and a thread head when a
// write changed what they show. Writes of other processes (the hooks'
// refresh at session end, another agent, a person) are noticed at this
// server's next write, not as they happen: nothing watches the vault
// between calls. Nodes never change once written and are never notified.

func (s *Server) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	uri := req.Params.URI
	if _, _, err := headOf(uri); err != nil && uri != learningsURI && uri != decisionsURI {
		if strings.HasPrefix(uri, nodePrefix) {
			return nil // accepted; a node never changes
		}
		return resourceError(err)
	}
	fp := s.fingerprint(ctx, req.Session, uri)
	s.mu.Lock()
	s.watched[uri] = fp
	s.mu.Unlock()
	return nil
}

func (s *Server) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	s.mu.Lock()
	delete(s.watched, req.Params.URI)
	s.mu.Unlock()
	return nil
}

// fingerprint is a hash of a head's text as readHead gives it, or "" when
// it cannot be read.
func (s *Server) fingerprint(ctx context.Context, ss *sdk.ServerSession, uri string) string {
	c, err := s.open(ctx, ss, false)
	if err != nil {
		return ""
	}
	var text []byte
	if uri == learningsURI || uri == decisionsURI {
		var t string
		t, err = protocolListText(c, uri)
		text = []byte(t)
	} else {
		head, th, herr := headOf(uri)
		if herr != nil {
			return ""
		}
		text, err = headText(c, head, th)
	}
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(text)
	return hex.EncodeToString(sum[:])
}

// notifyHeads tells subscribers of each head whose text changed since they
// were last told.
func (s *Server) notifyHeads(ctx context.Context, ss *sdk.ServerSession) {
	s.mu.Lock()
	uris := make([]string, 0, len(s.watched))
	for uri := range s.watched {
		uris = append(uris, uri)
	}
	s.mu.Unlock()
	slices.Sort(uris)
	for _, uri := range uris {
		fp := s.fingerprint(ctx, ss, uri)
		s.mu.Lock()
		old, still := s.watched[uri]
		changed := still && old != fp
		if changed {
			s.watched[uri] = fp
		}
		s.mu.Unlock()
		if changed {
			_ = s.sdk.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri})
		}
	}
}
