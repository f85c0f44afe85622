package e2etest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// CodexTrust appends to config.toml the trust entries that Codex's /hooks
// review would write for every hook in hooksFile: the key is
// <file>:<event_snake>:<group>:<handler>, the hash sha256 over the compact,
// key-sorted JSON of the normalised handler (fixtures/hooks/README.md).
func CodexTrust(t *testing.T, configToml, hooksFile string) {
	t.Helper()
	data, err := os.ReadFile(hooksFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Hooks map[string][]struct {
			Matcher *string `json:"matcher"`
			Hooks   []struct {
				Type    string   `json:"type"`
				Command string   `json:"command"`
				Timeout *float64 `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`([a-z])([A-Z])`)
	var b strings.Builder
	var events []string
	for ev := range doc.Hooks {
		events = append(events, ev)
	}
	sort.Strings(events)
	for _, ev := range events {
		name := strings.ToLower(snake.ReplaceAllString(ev, "${1}_${2}"))
		for gi, g := range doc.Hooks[ev] {
			for hi, h := range g.Hooks {
				timeout := 600
				if ev == "SessionEnd" {
					timeout = 1
				}
				if h.Timeout != nil {
					timeout = int(*h.Timeout)
				}
				if ev == "SessionEnd" && timeout > 3 {
					timeout = 3
				}
				id := map[string]any{"event_name": name, "hooks": []any{map[string]any{"async": false, "command": h.Command,
					"timeout": timeout, "type": h.Type}}}
				if g.Matcher != nil {
					id["matcher"] = *g.Matcher
				}
				var buf bytes.Buffer
				enc := json.NewEncoder(&buf)
				enc.SetEscapeHTML(false)
				enc.Encode(id)
				sum := sha256.Sum256(bytes.TrimSpace(buf.Bytes()))
				fmt.Fprintf(&b, "\n[hooks.state.%q]\ntrusted_hash = \"sha256:%x\"\n", fmt.Sprintf("%s:%s:%d:%d", hooksFile, name, gi, hi), sum)
			}
		}
	}
	f, err := os.OpenFile(configToml, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(b.String())
}

// CodexConfig is a ~/.codex/config.toml that sends Codex to the fake model
// at baseURL: auth is the provider's key line (`env_key = "…"` or
// `experimental_bearer_token = "…"`), extra is appended as it is (a
// project's trust, say). Updates, plugins and analytics are off, and no
// request is retried, so a failure shows at once.
func CodexConfig(baseURL, auth, extra string) string {
	return fmt.Sprintf(`model = "fake-model"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "%s/v1"
wire_api = "responses"
%s
request_max_retries = 0
stream_max_retries = 0

[features]
plugins = false

[analytics]
enabled = false
`, baseURL, auth) + extra
}
