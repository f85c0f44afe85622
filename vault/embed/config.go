// Package embed is semantic search's client and cache (docs/RETRIEVAL.md,
// "Semantic search"): memvault.toml's [embed] table checked (ConfigOf),
// the client of an OpenAI-compatible embeddings endpoint, bounded in time,
// in the size of what it reads and in where it sends (client.go), and the
// vector cache under .state/, keyed by model and dimensions, searched by
// brute force (store.go). What is embedded, and when, is vault/recall's.
package embed

import (
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// The bounds of the [embed] table, and its defaults.
const (
	DefaultBatch   = 32
	MaxBatch       = 256
	DefaultTimeout = 30 * time.Second
	MaxTimeout     = 10 * time.Minute
	MaxDimensions  = 8192
	// MaxTextBytes is the most of one text sent: about 2,000 tokens, the
	// context of the small embedding models; a longer message is cut at a
	// rune boundary.
	MaxTextBytes = 8 << 10
)

// Config is the [embed] table checked, with its defaults.
type Config struct {
	URL        string
	Model      string
	KeyEnv     string // the environment variable the API key is read from; "" for none
	Dimensions int    // 0: what the model answers
	Batch      int
	Timeout    time.Duration
}

var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`) })

// ConfigOf is semantic search's part of f: ok false when there is no
// [embed] table (no url), an error naming the key when it is wrong. An API
// key written in the file, in api_key or in the URL, is refused: the file
// is committed and synced, the key belongs in the environment.
func ConfigOf(f *vault.Config) (c Config, ok bool, err error) {
	e := f.Embed
	if e.URL == "" && e.Model == "" && e.APIKey == "" && e.APIKeyEnv == "" {
		return Config{}, false, nil
	}
	bad := func(format string, args ...any) error {
		return fault.New(vault.ErrInvalid, "%s: [embed] "+format, append([]any{vault.ConfigFile}, args...)...)
	}
	if e.APIKey != "" {
		err := fault.New(vault.ErrInvalid, "%s: [embed] api_key: a key is never written in the file (it is committed and synced)", vault.ConfigFile)
		return Config{}, false, err.WithHint(`put the key in an environment variable and name it: api_key_env = "MY_EMBED_KEY"`)
	}
	u, perr := url.Parse(e.URL)
	switch {
	case e.URL == "":
		return Config{}, false, bad("url: missing (an OpenAI-compatible endpoint like http://127.0.0.1:11434/v1/embeddings)")
	case perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "":
		return Config{}, false, bad("url %q: not an http or https URL", e.URL)
	case u.User != nil || keyInQuery(u):
		return Config{}, false, bad("url: holds a credential; name the variable that holds it in api_key_env instead")
	case e.Model == "":
		return Config{}, false, bad("model: missing (the embedding model's name, like nomic-embed-text)")
	case e.APIKeyEnv != "" && !envName().MatchString(e.APIKeyEnv):
		return Config{}, false, bad("api_key_env %q: not the name of an environment variable (the key itself is never written here)", short(e.APIKeyEnv))
	case e.Dimensions < 0 || e.Dimensions > MaxDimensions:
		return Config{}, false, bad("dimensions %d: want 1 to %d, or leave it out", e.Dimensions, MaxDimensions)
	case e.Batch < 0 || e.Batch > MaxBatch:
		return Config{}, false, bad("batch %d: want 1 to %d, or leave it out", e.Batch, MaxBatch)
	}
	c = Config{URL: u.String(), Model: e.Model, KeyEnv: e.APIKeyEnv, Dimensions: e.Dimensions, Batch: e.Batch, Timeout: DefaultTimeout}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if e.Timeout != "" {
		d, err := time.ParseDuration(e.Timeout)
		if err != nil || d <= 0 || d > MaxTimeout {
			return Config{}, false, bad("timeout %q: want a duration like 30s, at most %s", e.Timeout, MaxTimeout)
		}
		c.Timeout = d
	}
	return c, true, nil
}

// keyInQuery reports whether a URL's query names what looks like a
// credential.
func keyInQuery(u *url.URL) bool {
	for k := range u.Query() {
		k = strings.ToLower(k)
		for _, w := range []string{"key", "token", "secret", "auth", "password"} {
			if strings.Contains(k, w) {
				return true
			}
		}
	}
	return false
}

// short is s cut for an error message: what may be a key is not repeated
// whole.
func short(s string) string {
	if len(s) > 8 {
		return s[:4] + "…"
	}
	return s
}
