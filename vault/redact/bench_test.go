package redact

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// benchTexts are what a hook redacts: a prompt of plain prose (the common
// case, which no rule's needles admit), a tool call's output of code and
// paths, and a message that holds a few secrets. The code is the
// engine's ledger.go, which names no secret shape on purpose.
func benchTexts(b *testing.B) map[string]string {
	prose, err := os.ReadFile(filepath.Join("testdata", "prose.txt"))
	if err != nil {
		b.Fatal(err)
	}
	code, err := os.ReadFile(filepath.Join("..", "ledger.go"))
	if err != nil {
		b.Fatal(err)
	}
	return map[string]string{
		"prompt":  "Can you look at why the webhook retries stop after the third attempt? The logs show a 502 from the gateway and then nothing; I think the backoff is capped too low.",
		"prose":   string(prose),
		"code":    string(code[:min(len(code), 16<<10)]),
		"secrets": strings.Repeat("deploy with AKIAIOSFODNN7EXAMPLE, then curl -H 'Authorization: Bearer 0123456789abcdef0123' and password=hunter2x9; ", 8),
	}
}

// BenchmarkText redacts each text with the default rules, compiled once
// before the clock starts (a hook pays the compile once per process).
func BenchmarkText(b *testing.B) {
	texts := benchTexts(b)
	rs := DefaultRules()
	for _, name := range []string{"prompt", "prose", "code", "secrets"} {
		Text(texts[name], rs)
	}
	for _, name := range []string{"prompt", "prose", "code", "secrets"} {
		text := texts[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for i := 0; i < b.N; i++ {
				Text(text, rs)
			}
		})
	}
}

// BenchmarkCompile is what the first redaction of a process pays: every
// default pattern compiled.
func BenchmarkCompile(b *testing.B) {
	var srcs []string
	for _, r := range defaultRules {
		if r.pattern != nil {
			srcs = append(srcs, r.pattern().String())
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, src := range srcs {
			regexp.MustCompile(src)
		}
	}
}
