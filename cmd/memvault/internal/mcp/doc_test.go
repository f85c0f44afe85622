package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/vault"
)

var update = flag.Bool("update", false, "rewrite docs/MCP.md's reference and examples from this run")

// TestMCPDoc keeps docs/MCP.md true: its tool reference is generated from
// the schemas the server publishes, and its example exchanges are the
// JSON-RPC messages of a session this test runs, with what changes from run
// to run (ids, hashes, times, paths) replaced by stable stand-ins. A change
// to a tool, a schema or a result fails it until the doc is regenerated:
//
//	go test ./cmd/memvault/internal/mcp -run TestMCPDoc -update
func TestMCPDoc(t *testing.T) {
	path := filepath.Join("..", "..", "..", "..", "docs", "MCP.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, part := range []struct{ name, text string }{
		{"tool reference", toolReference(t)},
		{"examples", docExamples(t)},
	} {
		begin := "<!-- BEGIN " + part.name + ", generated: go test ./cmd/memvault/internal/mcp -run TestMCPDoc -update -->\n"
		end := "<!-- END " + part.name + " -->"
		i, j := strings.Index(doc, begin), strings.Index(doc, end)
		if i < 0 || j < i {
			t.Fatalf("docs/MCP.md has no %q … %q", begin, end)
		}
		if got := doc[i+len(begin) : j]; got != part.text {
			if !*update {
				t.Errorf("docs/MCP.md's %s differs from what the server does; run go test ./cmd/memvault/internal/mcp -run TestMCPDoc -update\n%s",
					part.name, firstDiff(got, part.text))
				continue
			}
			doc = doc[:i+len(begin)] + part.text + doc[j:]
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// firstDiff shows where two texts part.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  doc:  %s\n  run:  %s", i+1, x, y)
		}
	}
	return ""
}

// docOrder is the order the doc presents the tools in.
var docOrder = []string{"recall", "expand", "context", "status", "ledger", "timeline",
	"remember", "commitment_open", "commitment_close", "decide", "learn", "next", "done",
	"continuity_status", "budget", "audit", "continuity_index"}

// toolReference is a section per tool: its description, its arguments
// from the input schema, and the fields of its result.
func toolReference(t *testing.T) string {
	f := setup(t, Options{}, "")
	res, err := f.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*sdk.Tool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}
	if len(tools) != len(docOrder) {
		t.Fatalf("the doc orders %d tools, the server has %d", len(docOrder), len(tools))
	}
	var b strings.Builder
	for _, name := range docOrder {
		tool := tools[name]
		if tool == nil {
			t.Fatalf("no tool %s", name)
		}
		fmt.Fprintf(&b, "### `%s`\n\n%s\n\n", name, tool.Description)
		in := schemaOf(t, tool.InputSchema)
		if len(in.Properties) == 0 {
			b.WriteString("No arguments.\n\n")
		} else {
			b.WriteString("| argument | type | meaning |\n| --- | --- | --- |\n")
			for _, p := range in.order() {
				fmt.Fprintf(&b, "| `%s` | %s | %s |\n", p, in.Properties[p].typeText(slices.Contains(in.Required, p)),
					in.Properties[p].Description)
			}
			b.WriteString("\n")
		}
		out := schemaOf(t, tool.OutputSchema)
		var fields []string
		for _, p := range out.order() {
			fields = append(fields, "`"+p+"`")
		}
		fmt.Fprintf(&b, "Result: %s.\n\n", strings.Join(fields, ", "))
	}
	return b.String()
}

// docSchema is what the reference reads of a JSON schema.
type docSchema struct {
	Type          any                   `json:"type"`
	Description   string                `json:"description"`
	Properties    map[string]*docSchema `json:"properties"`
	PropertyOrder []string              `json:"propertyOrder"`
	Required      []string              `json:"required"`
	Items         *docSchema            `json:"items"`
	Enum          []any                 `json:"enum"`
	Default       any                   `json:"default"`
	Minimum       *float64              `json:"minimum"`
}

// UnmarshalJSON reads a schema, or the boolean schema true (anything).
func (s *docSchema) UnmarshalJSON(data []byte) error {
	if string(data) == "true" || string(data) == "false" {
		return nil
	}
	type plain docSchema
	return json.Unmarshal(data, (*plain)(s))
}

func schemaOf(t *testing.T, s any) *docSchema {
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var d docSchema
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// order is the properties in the order of the Go type, else by name.
func (s *docSchema) order() []string {
	if len(s.PropertyOrder) == len(s.Properties) {
		return s.PropertyOrder
	}
	var out []string
	for p := range s.Properties {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// typeText says a property's type, values, default and bound.
func (s *docSchema) typeText(required bool) string {
	typ := fmt.Sprint(s.Type)
	if types, ok := s.Type.([]any); ok { // ["null","array"]: a list that may be left out
		typ = fmt.Sprint(types[len(types)-1])
	}
	if s.Type == nil {
		typ = "any"
	}
	if typ == "array" && s.Items != nil {
		typ = "array of " + fmt.Sprint(s.Items.Type)
		if len(s.Items.Enum) > 0 {
			typ += ": " + enumText(s.Items.Enum)
		}
	}
	if len(s.Enum) > 0 {
		typ += ": " + enumText(s.Enum)
	}
	if required {
		typ += ", required"
	}
	if s.Default != nil {
		typ += fmt.Sprintf(", default `%v`", s.Default)
	}
	if s.Minimum != nil {
		typ += fmt.Sprintf(", at least %v", *s.Minimum)
	}
	return typ
}

func enumText(values []any) string {
	var parts []string
	for _, v := range values {
		parts = append(parts, fmt.Sprintf("`%v`", v))
	}
	return strings.Join(parts, ", ")
}

// wireLog records the messages a client writes ("→") and reads ("←"), in
// the order they cross: a message written is logged before it is sent, so
// its answer cannot come first.
type wireLog struct {
	sdk.Transport
	mu   sync.Mutex
	msgs []string
}

func (w *wireLog) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := w.Transport.Connect(ctx)
	return &wireConn{Connection: c, log: w}, err
}

func (w *wireLog) add(arrow string, msg jsonrpc.Message) {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		panic(err)
	}
	w.mu.Lock()
	w.msgs = append(w.msgs, arrow+string(data))
	w.mu.Unlock()
}

// take returns the messages logged since the last take.
func (w *wireLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

type wireConn struct {
	sdk.Connection
	log *wireLog
}

func (c *wireConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.log.add("→ ", msg)
	return c.Connection.Write(ctx, msg)
}

func (c *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.log.add("← ", msg)
	}
	return msg, err
}

// docExamples runs a session on a project's vault and returns the exchanges,
// each under a heading.
func docExamples(t *testing.T) string {
	home := t.TempDir()
	project := filepath.Join(home, "shop")
	v, _, err := vault.Init(filepath.Join(project, vault.DirName))
	if err != nil {
		t.Fatal(err)
	}
	ct, st := sdk.NewInMemoryTransports()
	log := &wireLog{Transport: ct}
	server := New(Options{Dir: project, Session: "s-42", Harness: "claude-code", LockWait: 50 * time.Millisecond})
	ctx := context.Background()
	ss, err := server.Connect(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	updated := make(chan string, 8)
	client := sdk.NewClient(&sdk.Implementation{Name: "example-client", Version: "1.0"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{},
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
	})
	cs, err := client.Connect(ctx, log,
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	ex := &examples{t: t, norm: newNormalizer(home)}
	ex.add("The handshake", "", log.take())

	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var out map[string]any
		if !res.IsError {
			data, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(data, &out)
		}
		return out
	}
	id := func(out map[string]any, path ...string) string {
		var cur any = out
		for _, p := range path {
			switch c := cur.(type) {
			case map[string]any:
				cur = c[p]
			case []any:
				var i int
				fmt.Sscan(p, &i)
				cur = c[i]
			}
		}
		s, _ := cur.(string)
		return s
	}

	out := call("remember", map[string]any{"text": "retry Stripe webhooks five times, then park them", "kind": "decision"})
	ex.add("`remember`", "A decision, filed under the working folder's thread.", log.take())
	decision := id(out, "event", "id")
	call("remember", map[string]any{"text": "webhook handlers must be idempotent: Stripe delivers at least once",
		"kind": "learning", "links": []string{decision[:20]}})
	ex.add("`remember` with a link", "The link is a unique prefix of an id; the event stores the whole id.", log.take())
	out = call("commitment_open", map[string]any{"text": "ship the webhook fix by Friday"})
	ex.add("`commitment_open`", "", log.take())
	call("commitment_close", map[string]any{"id": id(out, "event", "id")[:20], "note": "shipped in v2.3"})
	ex.add("`commitment_close`", "", log.take())
	call("decide", map[string]any{"decision": "park failed webhooks in a dead-letter table",
		"rationale": "a person can replay them"})
	ex.add("`decide`", "The protocol's verbs answer with what they recorded and what became of CONTINUITY.md.", log.take())
	call("learn", map[string]any{"error": "the webhook test hit Stripe's live API", "cause": "no fake server",
		"prevention": "run webhook tests against the local fake", "scope": "module:billing"})
	ex.add("`learn`", "", log.take())
	out = call("next", map[string]any{"text": "add the dead-letter table migration"})
	ex.add("`next`", "", log.take())
	next := ""
	for _, e := range out["events"].([]any) {
		if e.(map[string]any)["kind"] == "next" {
			next = e.(map[string]any)["id"].(string)
		}
	}
	call("done", map[string]any{"text": next[:20]})
	ex.add("`done`", "Naming the next action by its id takes it off the queue.", log.take())
	call("recall", map[string]any{"query": "stripe webhooks", "limit": 2})
	ex.add("`recall`", "", log.take())

	node := summarize(t, v, "s-41", "project:shop", "why do webhooks arrive twice?",
		"Stripe retries until it gets a 2xx; the handler now dedupes on the event id.")
	ex.norm.apply(node.ID) // made outside the session: its stand-in before its prefix is met
	call("expand", map[string]any{"id": node.ID[:20]})
	ex.add("`expand`", "The node of an earlier session, from its id's prefix.", log.take())
	call("ledger", map[string]any{"kind": "decision", "limit": 1})
	ex.add("`ledger`", "", log.take())
	call("timeline", map[string]any{"thread": "project:shop", "limit": 4})
	ex.add("`timeline`", "", log.take())
	call("context", map[string]any{"limit": 1500})
	ex.add("`context`", "", log.take())
	call("status", nil)
	ex.add("`status`", "", log.take())
	call("continuity_status", nil)
	ex.add("`continuity_status`", "", log.take())
	call("budget", map[string]any{"global": true})
	ex.add("`budget`", "What each category costs, and MEMORY.md's report: a row left out would be listed under its section's `dropped`.", log.take())
	call("audit", map[string]any{"dry_run": true})
	ex.add("`audit` with `dry_run`", "What the audit would do today, and why; nothing is written.", log.take())

	if _, err := cs.ListResources(ctx, nil); err != nil {
		t.Fatal(err)
	}
	ex.add("Listing the resources", "", log.take())
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "memvault://threads/project/shop"}); err != nil {
		t.Fatal(err)
	}
	ex.add("Reading a thread head", "Never written yet, so rendered on the fly; nothing is written.", log.take())
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "memvault://nodes/" + node.ID}); err != nil {
		t.Fatal(err)
	}
	ex.add("Reading a node", "", log.take())
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: learningsURI}); err != nil {
		t.Fatal(err)
	}
	ex.add("Reading the learnings", "As `memvault continuity learnings` lists them in the working folder.", log.take())
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: continuityURI}); err != nil {
		t.Fatal(err)
	}
	call("next", map[string]any{"text": "replay the parked webhooks of last week"})
	select {
	case <-updated:
	case <-time.After(10 * time.Second):
		t.Fatal("no notification")
	}
	ex.add("Subscribing to a head", "A write that re-renders CONTINUITY.md tells the subscriber, after its result.", log.take())
	if _, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "catch_up"}); err != nil {
		t.Fatal(err)
	}
	ex.add("The `catch_up` prompt", "", log.take())

	call("recall", map[string]any{"tiers": []string{"nodes"}})
	ex.add("Error: bad arguments", "", log.take())
	call("expand", map[string]any{"id": "n_01k0zzzzzz"})
	ex.add("Error: an unknown id", "", log.take())
	_, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "memvault://threads/project/nope"})
	if err == nil {
		t.Fatal("read of an unknown thread succeeded")
	}
	ex.add("Error: an unknown resource", "", log.take())
	release, err := v.Lock(vault.Lease{Agent: "default", Command: "gc"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	call("remember", map[string]any{"text": "a fact while the vault is busy"})
	release()
	ex.add("Error: a busy vault", "", log.take())
	tamperFirstLine(t, v)
	call("remember", map[string]any{"text": "a fact the vault refuses"})
	ex.add("Error: a vault that needs repair", "", log.take())
	return ex.b.String()
}

// tamperFirstLine changes a word of the ledger's first event, as a bad hand
// edit would.
func tamperFirstLine(t *testing.T, v *vault.Vault) {
	w, err := vault.Open(v.Root)
	if err != nil {
		t.Fatal(err)
	}
	st, err := w.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(v.Root, filepath.FromSlash(st.Rows[0].File))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seg, bytes.Replace(data, []byte("five times"), []byte("nine times"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
}

// examples builds the examples' markdown.
type examples struct {
	t    *testing.T
	b    strings.Builder
	norm *normalizer
}

func (e *examples) add(title, note string, msgs []string) {
	if len(msgs) == 0 {
		e.t.Fatalf("%s: no messages", title)
	}
	fmt.Fprintf(&e.b, "#### %s\n\n", title)
	if note != "" {
		fmt.Fprintf(&e.b, "%s\n\n", note)
	}
	e.b.WriteString("```\n")
	for _, m := range msgs {
		arrow, body := m[:len("→ ")], m[len("→ "):]
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			e.t.Fatalf("%s: not JSON: %s", title, body)
		}
		sameText(v)
		var pretty bytes.Buffer
		enc := json.NewEncoder(&pretty)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			e.t.Fatal(err)
		}
		fmt.Fprintf(&e.b, "%s%s", arrow, e.norm.apply(pretty.String()))
	}
	e.b.WriteString("```\n\n")
}

// sameText shortens a tool result's text content where it is the
// structured content again, as JSON text: the doc shows it once.
func sameText(msg any) {
	m, _ := msg.(map[string]any)
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if res["structuredContent"] == nil || len(content) != 1 {
		return
	}
	c, _ := content[0].(map[string]any)
	text, _ := c["text"].(string)
	var again any
	if json.Unmarshal([]byte(text), &again) != nil {
		return
	}
	a, _ := json.Marshal(again)
	b, _ := json.Marshal(res["structuredContent"])
	if bytes.Equal(a, b) {
		c["text"] = "(structuredContent, as JSON text)"
	}
}

// normalizer replaces what differs between runs with stand-ins that keep
// each value's shape: the n-th event id met becomes e_01k…n, and so on.
type normalizer struct {
	home string
	seen map[string]string
	n    map[string]int
}

func newNormalizer(home string) *normalizer {
	return &normalizer{home: home, seen: map[string]string{}, n: map[string]int{}}
}

var volatile = []struct {
	kind string
	re   *regexp.Regexp
}{
	{"id", regexp.MustCompile(`\b[a-z]_[0-9a-z]{26}\b`)},
	{"hash", regexp.MustCompile(`\b[0-9a-f]{64}\b`)},
	{"commit", regexp.MustCompile(`\b[0-9a-f]{40}\b`)},
	{"token", regexp.MustCompile(`"token": "[^"]*"`)},
}

// protocolVersions are the protocol's versions, named by date.
var protocolVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}

var (
	prefixRE   = regexp.MustCompile(`\b[en]_[0-9a-z]{4,25}\b`)
	tsRE       = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	dateRE     = regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b`)
	dayPathRE  = regexp.MustCompile(`\b20\d\d/\d\d/\d\d\b`)
	monthRE    = regexp.MustCompile(`\b20\d\d/\d\d/`)
	pidRE      = regexp.MustCompile(`pid \d+`)
	heldForRE  = regexp.MustCompile(`, \d+(\.\d+)? ?(ms|s|µs)\)`)
	diskRE     = regexp.MustCompile(`"loose_disk_bytes_estimate": \d+`)
	looseRE    = regexp.MustCompile(`"loose_objects_estimate": \d+`)
	pidFieldRE = regexp.MustCompile(`"pid": \d+`)
	hostRE     = regexp.MustCompile(`"host": "[^"]*"`)
	scoreRE    = regexp.MustCompile(`"score": \d+\.\d+`)
)

func (n *normalizer) apply(s string) string {
	s = strings.ReplaceAll(s, n.home, "/home/you")
	for _, v := range volatile {
		s = v.re.ReplaceAllStringFunc(s, func(m string) string {
			key := v.kind + m
			if r, ok := n.seen[key]; ok {
				return r
			}
			n.n[v.kind]++
			k := n.n[v.kind]
			var r string
			switch v.kind {
			case "id": // e_ events, n_ nodes, m_ transcript messages
				r = fmt.Sprintf("%s_01k%023d", m[:1], k)
			case "hash":
				r = fmt.Sprintf("%064x", k)
			case "commit":
				r = fmt.Sprintf("%040x", 0xc0ffee00+k)
			case "token":
				r = `"token": "…"`
			}
			n.seen[key] = r
			return r
		})
	}
	// An id's prefix stands for the id: the stand-in's prefix of its length.
	s = prefixRE.ReplaceAllStringFunc(s, func(m string) string {
		for key, r := range n.seen {
			if orig, ok := strings.CutPrefix(key, "id"); ok && strings.HasPrefix(orig, m) {
				return r[:len(m)]
			}
		}
		return m
	})
	s = tsRE.ReplaceAllString(s, "2026-11-22T10:00:00.000Z")
	s = dateRE.ReplaceAllStringFunc(s, func(m string) string {
		if slices.Contains(protocolVersions, m) {
			return m // a protocol version, not a day
		}
		return "2026-11-22"
	})
	s = dayPathRE.ReplaceAllString(s, "2026/11/22")
	s = monthRE.ReplaceAllString(s, "2026/11/")
	s = pidRE.ReplaceAllString(s, "pid 4242")
	s = heldForRE.ReplaceAllString(s, ", 12ms)")
	s = diskRE.ReplaceAllString(s, `"loose_disk_bytes_estimate": 98304`)
	s = looseRE.ReplaceAllString(s, `"loose_objects_estimate": 24`)
	s = pidFieldRE.ReplaceAllString(s, `"pid": 4242`)
	s = hostRE.ReplaceAllString(s, `"host": "laptop"`)
	s = scoreRE.ReplaceAllStringFunc(s, func(m string) string { // scores to three places: enough to read, stable across machines
		var f float64
		fmt.Sscanf(strings.TrimPrefix(m, `"score": `), "%g", &f)
		return fmt.Sprintf(`"score": %.3f`, f)
	})
	return s
}
