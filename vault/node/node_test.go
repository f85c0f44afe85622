package node

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/fileio"
)

func sample(id, session, created string) *Node {
	return &Node{ID: id, Kind: Compaction, Agent: "default", Session: session, Harness: "codex",
		Threads: []string{"project:shop"}, Children: []string{}, Created: created,
		Title: "compaction of " + session + ": tabs\tand\\slashes", Span: &Span{Path: "transcripts/default/" + session + ".jsonl", From: 1, To: 4},
		Body: "## What happened\n\nthe webhooks were made idempotent\n"}
}

// TestEncodeParse holds a node file to its round trip: the same node gives
// the same bytes, and reading them gives the node back; the summariser's
// fields are left out of the file when they are empty.
func TestEncodeParse(t *testing.T) {
	n := sample("n_01", "s1", "2026-11-22T10:00:00.000Z")
	data := n.Encode()
	if strings.Contains(string(data), "summary") {
		t.Errorf("an empty summary field is written:\n%s", data)
	}
	got, err := Parse(data, false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, n) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, n)
	}
	head, err := Parse(data, true)
	if err != nil || head.Body != "" || head.ID != n.ID {
		t.Errorf("header only: %+v, %v", head, err)
	}
	n.Summary, n.SummaryBy = SummaryModel, "fake"
	if data := string(n.Encode()); !strings.Contains(data, "summary: \"model\"\nsummary_by: \"fake\"\n") {
		t.Errorf("the summariser's fields:\n%s", data)
	}
	for _, bad := range []string{"no front matter", "---\nid: \"n_1\"\n", "---\nid: \"n_1\"\n---\n\nbody\n", "---\nid: 3\nkind: \"x\"\nagent: \"a\"\n---\n"} {
		if _, err := Parse([]byte(bad), true); err == nil {
			t.Errorf("Parse(%q) took it", bad)
		}
	}
}

// TestCacheLine holds the cache's line codec to the headers it keeps:
// tabs, newlines and backslashes in a field survive, the body does not.
func TestCacheLine(t *testing.T) {
	n := sample("n_02", "s2", "2026-11-22T10:00:00.000Z")
	n.Title += "\nsecond line"
	n.Harness = `back\slash`
	n.Path = "nodes/default/2026/11/n_02.md"
	got, ok := parseCacheLine(n.cacheLine())
	want := *n
	want.Body = ""
	if !ok || !reflect.DeepEqual(got, &want) {
		t.Errorf("cache line round trip:\n got %+v\nwant %+v", got, &want)
	}
	if !strings.Contains(n.cacheLine(), FieldNeedle(n.Session)) {
		t.Errorf("FieldNeedle(%q) does not find the session field in %q", n.Session, n.cacheLine())
	}
	if _, ok := parseCacheLine("#dir\tnodes/a/2026/11\t1"); ok {
		t.Error("a folder line read as a node")
	}
}

func write(t *testing.T, root string, n *Node) {
	t.Helper()
	c, _ := time.Parse(time.RFC3339Nano, n.Created)
	n.Path = filepath.ToSlash(filepath.Join("nodes", n.Agent, c.Format("2006"), c.Format("01"), n.ID+".md"))
	p := filepath.Join(root, filepath.FromSlash(n.Path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, n.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoad holds the loader to the files: a cache is written on the first
// load and used by the next, a node added to a month folder is found, a
// lookup keeps only the lines with its needles, and parents come from a
// condensed node's children.
func TestLoad(t *testing.T) {
	root := t.TempDir()
	files := fileio.At(root)
	if err := os.MkdirAll(filepath.Join(root, ".state"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, b := sample("n_a", "s1", "2026-10-01T10:00:00.000Z"), sample("n_b", "s2", "2026-11-02T10:00:00.000Z")
	write(t, root, a)
	write(t, root, b)
	ix, err := Load(files)
	if err != nil || len(ix.Nodes) != 2 {
		t.Fatalf("Load: %v, %v", ix, err)
	}
	if _, err := os.Stat(filepath.Join(root, cacheFile)); err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	// A new node in a folder the cache knows: the folder's mtime changes.
	c := sample("n_c", "s1", "2026-11-03T10:00:00.000Z")
	c.Kind, c.Span, c.Children = Condensed, nil, []string{"n_a", "n_b"}
	write(t, root, c)
	// Set apart from the first write's mtime, which a coarse clock can share.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(root, "nodes/default/2026/11"), later, later); err != nil {
		t.Fatal(err)
	}
	ix, err = Load(files)
	if err != nil || len(ix.Nodes) != 3 || !reflect.DeepEqual(ix.Parents["n_a"], []string{"n_c"}) {
		t.Fatalf("after a new node: %+v, %v", ix, err)
	}
	// The cache is fresh now: a lookup reads only the lines it names.
	ix, err = Lookup(files, []string{FieldNeedle("s1")}, nil)
	if err != nil || len(ix.Nodes) != 2 || ix.Nodes["n_b"] != nil {
		t.Fatalf("lookup of s1: %+v, %v", ix.Nodes, err)
	}
	ix, err = Lookup(files, []string{"n_b"}, func(ix *Index) []string { return ix.Parents["n_b"] })
	if err != nil || len(ix.Nodes) != 2 || ix.Nodes["n_c"] == nil {
		t.Fatalf("lookup of n_b and its parent: %+v, %v", ix.Nodes, err)
	}
	full, err := Read(files, ix.Nodes["n_b"])
	if err != nil || full.Body != b.Body {
		t.Errorf("Read: %+v, %v", full, err)
	}
	var ids []string
	for _, n := range ix.Select(Filter{Agent: "default"}) {
		ids = append(ids, n.ID)
	}
	if !reflect.DeepEqual(ids, []string{"n_b", "n_c"}) {
		t.Errorf("Select: %v, want oldest first", ids)
	}
	months, err := MonthDirs(files)
	if err != nil || !reflect.DeepEqual(months, []string{"nodes/default/2026/10", "nodes/default/2026/11"}) {
		t.Errorf("MonthDirs: %v, %v", months, err)
	}
}
