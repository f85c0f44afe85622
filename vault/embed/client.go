package embed

// The client of an OpenAI-compatible embeddings endpoint (POST
// {"model", "input": [...]} → {"data": [{"index", "embedding"}]}; Ollama's
// own /api/embed answer, {"embeddings": [[...]]}, is read too). It sends
// only to the configured URL: no proxy, no redirect to another scheme,
// host or port, and what it reads is bounded by the batch it asked for.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// MaxResponseBytes bounds one answer whatever the batch: 64 MiB.
const MaxResponseBytes = 64 << 20

// Client asks one endpoint for embeddings.
type Client struct {
	cfg  Config
	key  string
	base *url.URL
	hc   *http.Client
}

// NewClient makes the client of cfg; the API key, when cfg names its
// variable, is read through getenv, and a variable that is unset is an
// error (a request without it would only be refused).
func NewClient(cfg Config, getenv func(string) string) (*Client, error) {
	base, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fault.New(vault.ErrInvalid, "embed: url %q: %v", cfg.URL, err)
	}
	c := &Client{cfg: cfg, base: base}
	if cfg.KeyEnv != "" {
		if c.key = getenv(cfg.KeyEnv); c.key == "" {
			return nil, fault.New(vault.ErrInvalid, "embed: api_key_env names %s, which is not set", cfg.KeyEnv)
		}
	}
	tr := &http.Transport{Proxy: nil, MaxIdleConns: 2, ResponseHeaderTimeout: cfg.Timeout}
	c.hc = &http.Client{Transport: tr, Timeout: cfg.Timeout, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != base.Scheme || req.URL.Host != base.Host {
			return fmt.Errorf("redirect to %s://%s refused: requests go only to the configured url", req.URL.Scheme, req.URL.Host)
		}
		if len(via) >= 3 {
			return errors.New("more than 3 redirects")
		}
		return nil
	}}
	return c, nil
}

// Config is the configuration the client was made with.
func (c *Client) Config() Config { return c.cfg }

// Embed returns one unit vector per text, in order. The texts are sent as
// they are: the caller has redacted them (vault.Vault.Redact) and cut them
// (Clip). Every answer is checked: as many vectors as texts, one length,
// the configured dimensions when set, finite values, not all zero.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	req := map[string]any{"model": c.cfg.Model, "input": texts}
	if c.cfg.Dimensions > 0 {
		req["dimensions"] = c.cfg.Dimensions
	}
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		hr.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(hr)
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err)) {
		return nil, fmt.Errorf("embed: %s: no answer within %s (timeout)", c.cfg.URL, c.cfg.Timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("embed: %s: %w", c.cfg.URL, stripURL(err))
	}
	defer resp.Body.Close()
	limit := c.responseLimit(len(texts))
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("embed: %s: read the answer: %w", c.cfg.URL, stripURL(err))
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("embed: %s: the answer is over %d bytes for %d texts", c.cfg.URL, limit, len(texts))
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("embed: %s: %s: %s", c.cfg.URL, resp.Status, oneLine(data, 200))
	}
	return c.decode(data, len(texts))
}

// responseLimit is the most an answer for n texts may be: 24 bytes a
// number (a float64 as JSON writes it, with its comma), 64 KiB besides.
func (c *Client) responseLimit(n int) int64 {
	dims := c.cfg.Dimensions
	if dims == 0 {
		dims = MaxDimensions
	}
	return min(int64(n)*int64(dims)*24+64<<10, MaxResponseBytes)
}

func (c *Client) decode(data []byte, n int) ([][]float32, error) {
	var ans struct {
		Data []struct {
			Index     *int      `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
		Embeddings [][]float64 `json:"embeddings"`
	}
	if err := json.Unmarshal(data, &ans); err != nil {
		return nil, fmt.Errorf("embed: %s: not an embeddings answer: %s", c.cfg.URL, oneLine(data, 120))
	}
	raw := ans.Embeddings
	if len(ans.Data) > 0 {
		raw = make([][]float64, len(ans.Data))
		for i, d := range ans.Data {
			at := i
			if d.Index != nil {
				at = *d.Index
			}
			if at < 0 || at >= len(raw) || raw[at] != nil {
				return nil, fmt.Errorf("embed: %s: the answer's indexes are not 0 to %d", c.cfg.URL, len(raw)-1)
			}
			raw[at] = d.Embedding
		}
	}
	if len(raw) != n {
		return nil, fmt.Errorf("embed: %s: %d vectors for %d texts", c.cfg.URL, len(raw), n)
	}
	out := make([][]float32, n)
	for i, v := range raw {
		switch {
		case len(v) == 0 || len(v) > MaxDimensions:
			return nil, fmt.Errorf("embed: %s: a vector of %d dimensions", c.cfg.URL, len(v))
		case c.cfg.Dimensions > 0 && len(v) != c.cfg.Dimensions:
			return nil, fmt.Errorf("embed: %s: a vector of %d dimensions; [embed] dimensions says %d", c.cfg.URL, len(v), c.cfg.Dimensions)
		case len(v) != len(raw[0]):
			return nil, fmt.Errorf("embed: %s: vectors of %d and %d dimensions in one answer", c.cfg.URL, len(raw[0]), len(v))
		}
		u, ok := unit(v)
		if !ok {
			return nil, fmt.Errorf("embed: %s: a vector that is zero or not finite", c.cfg.URL)
		}
		out[i] = u
	}
	return out, nil
}

// unit is v scaled to length 1; false when it has no length or a value
// that is not a finite number.
func unit(v []float64) ([]float32, bool) {
	var sum float64
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, false
		}
		sum += x * x
	}
	norm := math.Sqrt(sum)
	if norm == 0 || math.IsInf(norm, 0) {
		return nil, false
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out, true
}

// Clip cuts text to MaxTextBytes at a rune boundary.
func Clip(text string) string {
	if len(text) <= MaxTextBytes {
		return text
	}
	cut := MaxTextBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut]
}

// stripURL leaves the URL out of a *url.Error, which the message names
// already.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// oneLine is the start of an answer for an error message: one line, at
// most n bytes, valid UTF-8.
func oneLine(data []byte, n int) string {
	s := strings.ToValidUTF8(string(data[:min(len(data), n)]), "?")
	s = strings.Join(strings.Fields(s), " ")
	if len(data) > n {
		s += "…"
	}
	return s
}
