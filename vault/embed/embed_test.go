package embed

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/embed/embedtest"
)

func cfgOf(t *testing.T, f func(c *vault.Config)) (Config, bool, error) {
	t.Helper()
	var c vault.Config
	f(&c)
	return ConfigOf(&c)
}

// The table's checks: a key in the file, in any of the places one could be
// written, is refused without being repeated; bad values name the key.
func TestConfigOf(t *testing.T) {
	if _, ok, err := cfgOf(t, func(c *vault.Config) {}); ok || err != nil {
		t.Fatalf("no table: ok=%v err=%v", ok, err)
	}
	cases := map[string]func(c *vault.Config){
		"api_key": func(c *vault.Config) {
			c.Embed.URL, c.Embed.Model, c.Embed.APIKey = "http://h/v1/embeddings", "m", "sk-secret-1234567"
		},
		"holds a credential": func(c *vault.Config) { c.Embed.URL, c.Embed.Model = "https://u:sk-secret-1234567@h/v1", "m" },
		"credential":         func(c *vault.Config) { c.Embed.URL, c.Embed.Model = "https://h/v1?api_key=sk-secret-1234567", "m" },
		"api_key_env": func(c *vault.Config) {
			c.Embed.URL, c.Embed.Model, c.Embed.APIKeyEnv = "http://h/", "m", "sk-secret-1234567"
		},
		"not an http":    func(c *vault.Config) { c.Embed.URL, c.Embed.Model = "file:///etc/passwd", "m" },
		"model: missing": func(c *vault.Config) { c.Embed.URL = "http://h/" },
		"dimensions":     func(c *vault.Config) { c.Embed.URL, c.Embed.Model, c.Embed.Dimensions = "http://h/", "m", 100000 },
		"batch":          func(c *vault.Config) { c.Embed.URL, c.Embed.Model, c.Embed.Batch = "http://h/", "m", -1 },
		"timeout":        func(c *vault.Config) { c.Embed.URL, c.Embed.Model, c.Embed.Timeout = "http://h/", "m", "forever" },
	}
	for want, f := range cases {
		_, _, err := cfgOf(t, f)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret-1234567") {
			t.Errorf("%s: %v", want, err)
		}
	}
	c, ok, err := cfgOf(t, func(c *vault.Config) {
		c.Embed.URL, c.Embed.Model = "http://127.0.0.1:11434/v1/embeddings", "nomic-embed-text"
	})
	if !ok || err != nil || c.Batch != DefaultBatch || c.Timeout != DefaultTimeout {
		t.Fatalf("defaults: %+v %v %v", c, ok, err)
	}
}

// Every way an endpoint can misbehave is an error within the timeout, and
// nothing of a 100 MB answer is read past the bound.
func TestClientAdversarial(t *testing.T) {
	srv := embedtest.New(32)
	defer srv.Close()
	c, err := NewClient(Config{URL: srv.URL(), Model: "m", Batch: 4, Timeout: time.Second}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := c.Embed(context.Background(), []string{"buy a car", "acquire a sedan"})
	if err != nil || len(vecs) != 2 || len(vecs[0]) != 32 {
		t.Fatalf("a good answer: %v %v", len(vecs), err)
	}
	var dot float64
	for i := range vecs[0] {
		dot += float64(vecs[0][i] * vecs[1][i])
	}
	if math.Abs(dot-1) > 1e-5 {
		t.Fatalf("synonyms: cosine %.3f, want 1", dot)
	}
	want := map[string]string{
		embedtest.Hang: "no answer within 1s", embedtest.Garbage: "not an embeddings answer", embedtest.Huge: "over",
		embedtest.Redirect: "redirect to http://192.0.2.1:9 refused", embedtest.Fail: "500", embedtest.Short: "1 vectors for 2 texts",
	}
	for mode, msg := range want {
		srv.SetMode(mode)
		start := time.Now()
		_, err := c.Embed(context.Background(), []string{"a", "b"})
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(msg)) {
			t.Errorf("%s: %v, want %q", mode, err, msg)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("%s: took %s", mode, took)
		}
	}
	srv.SetMode(embedtest.WrongDims)
	c2, _ := NewClient(Config{URL: srv.URL(), Model: "m", Dimensions: 32, Batch: 4, Timeout: time.Second}, nil)
	if _, err := c2.Embed(context.Background(), []string{"a"}); err == nil || !strings.Contains(err.Error(), "dimensions says 32") {
		t.Errorf("wrong dimensions: %v", err)
	}
	if _, err := NewClient(Config{URL: srv.URL(), Model: "m", KeyEnv: "UNSET_X"}, func(string) string { return "" }); err == nil {
		t.Error("an unset api_key_env was accepted")
	}
}

// The cache keeps what it saved, reads as empty for another model or other
// dimensions, and its search ranks by cosine.
func TestStore(t *testing.T) {
	root := t.TempDir()
	s := NewStore("m", 0)
	for i, text := range []string{"buy a car", "the garden party", "acquire a sedan"} {
		v := embedtest.Vector(text, 32)
		u, _ := unit(v)
		if !s.Add("m|x|"+string(rune('a'+i)), "default", "", Hash("m", text), u) {
			t.Fatal("add")
		}
	}
	s.Marks["transcripts/default/x.jsonl"] = 42
	if !s.Save(root) {
		t.Fatal("save")
	}
	got := Load(root, "m", 0)
	if got.Len() != 3 || got.Dims != 32 || got.Marks["transcripts/default/x.jsonl"] != 42 {
		t.Fatalf("load: %d %d %v", got.Len(), got.Dims, got.Marks)
	}
	q, _ := unit(embedtest.Vector("purchase vehicle", 32))
	near := got.Search(q, nil, 2)
	if len(near) != 2 || got.ID(near[0].Index) != "m|x|a" && got.ID(near[0].Index) != "m|x|c" || near[0].Sim < 0.6 {
		t.Fatalf("search: %+v", near)
	}
	if Load(root, "other", 0).Len() != 0 || Load(root, "m", 64).Len() != 0 {
		t.Fatal("a cache of another model or other dimensions was read")
	}
}
