package redact

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// secretSample is one sample of testdata/secrets.txt.
type secretSample struct{ kind, needle, family, text string }

// SecretSamples reads testdata/secrets.txt (see its header).
func secretSamples(t testing.TB, path string) []secretSample {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var samples []secretSample
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "#") && len(samples) == 0:
		case strings.HasPrefix(line, "= "):
			f := strings.Fields(strings.TrimPrefix(line, "= "))
			s := secretSample{kind: f[0], needle: f[1], family: f[0]}
			if len(f) > 2 {
				s.family = f[2]
			}
			samples = append(samples, s)
		case len(samples) > 0:
			s := &samples[len(samples)-1]
			s.text += line + "\n"
		}
	}
	return samples
}

// secretContexts are the places a sample is tried in besides plain text:
// a JSON value, a JSON key (a tool's input), the query of a URL, a
// command line, and a paragraph of a head as a person edits it.
var secretContexts = []struct {
	name string
	wrap func(text string) string
}{
	{"url", func(s string) string {
		return "GET https://ci.example.com/run?job=7&note=" + strings.ReplaceAll(strings.TrimSpace(s), "\n", "%0A") + "&retry=1 HTTP/1.1"
	}},
	{"command line", func(s string) string { return "$ sh -c '" + strings.TrimSpace(s) + "' 2>&1 | tee -a /tmp/deploy.log" }},
	{"hand edit", func(s string) string {
		return "## Notes\n\n- staging, as of Monday:\n  " + strings.ReplaceAll(s, "\n", "\n  ") + "\n"
	}},
}

// TestCorpusSecrets runs every sample of testdata/secrets.txt: its needle
// is gone and its kind was counted, as plain text and in each of
// secretContexts; as a JSON value and key, its needle is gone. It reports
// the samples per rule family.
func TestCorpusSecrets(t *testing.T) {
	samples := secretSamples(t, "testdata/secrets.txt")
	if len(samples) < 100 {
		t.Fatalf("%d samples: the corpus did not parse, or lost samples (at least 100)", len(samples))
	}
	kinds := map[string]bool{}
	families := map[string]int{}
	for _, s := range samples {
		kinds[s.kind] = true
		families[s.family]++
		got, counts := Text(s.text, DefaultRules())
		if strings.Contains(got, s.needle) || counts[s.kind] == 0 {
			t.Errorf("%s sample not redacted as %s (%v):\n%s", s.kind, s.kind, counts, got)
		}
		for _, c := range secretContexts {
			in := c.wrap(s.text)
			if got, counts := Text(in, DefaultRules()); strings.Contains(got, s.needle) || len(counts) == 0 {
				t.Errorf("%s sample kept in a %s (%v):\n%s", s.family, c.name, counts, got)
			}
		}
		// Tool inputs: the same sample as a JSON value and as a JSON key.
		for _, js := range []string{`{"cmd":` + jsonString(s.text) + `}`, `{` + jsonString(s.text) + `:1}`} {
			if out, _ := JSON([]byte(js), DefaultRules()); strings.Contains(string(out), s.needle) {
				t.Errorf("%s sample kept in JSON: %s", s.kind, out)
			}
		}
	}
	for _, k := range DefaultKinds() {
		if !kinds[k] {
			t.Errorf("the corpus has no sample of the default rule %s", k)
		}
	}
	names := slices.Sorted(maps.Keys(families))
	var b strings.Builder
	for _, f := range names {
		fmt.Fprintf(&b, " %s %d;", f, families[f])
	}
	t.Logf("%d samples of %d rule families, %d kinds:%s", len(samples), len(families), len(kinds), b.String())
}

// TestCorpusProse runs every sample of testdata/prose.txt: none changes.
func TestCorpusProse(t *testing.T) {
	data, err := os.ReadFile("testdata/prose.txt")
	if err != nil {
		t.Fatal(err)
	}
	var samples []string
	for _, s := range strings.Split(string(data), "\n%%\n") {
		if strings.HasPrefix(s, "#") {
			_, s, _ = strings.Cut(s, "sample is the lines between \"%%\" lines.\n")
		}
		samples = append(samples, s)
	}
	if len(samples) < 25 {
		t.Fatalf("%d samples: the corpus did not parse", len(samples))
	}
	for _, s := range samples {
		if got, counts := Text(s, DefaultRules()); got != s {
			t.Errorf("prose changed (%v):\n  in %q\n out %q", counts, s, got)
		}
	}
}

// TestFalsePositivesInTheRepository measures the rules against real text
// that holds no credential: memvault's own code, documentation and the
// conversations of fixtures/recall, line by line. Files whose subject is
// redaction (the rules, their tests and documentation) and the transcripts
// captured with planted secrets are left out. The rate is logged; any
// redaction fails the test with the line.
func TestFalsePositivesInTheRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	skip := map[string]bool{"vault/redact": true, "fixtures/transcripts": true, "fixtures/hooks": true, ".git": true}
	lines, hits, files := 0, 0, 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skip[rel] || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(p)
		if strings.HasSuffix(p, "_test.go") || (ext != ".go" && ext != ".md" && ext != ".jsonl" && ext != ".json") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		rs := DefaultRules()
		for i, line := range strings.Split(string(data), "\n") {
			lines++
			if out, counts := Text(line, rs); len(counts) > 0 {
				if rel == "docs/LINEAGE.md" && strings.Contains(line, "[redact.extra]") || strings.Contains(line, "REDACTED:") {
					continue // the documentation of redaction itself
				}
				hits++
				t.Errorf("%s:%d: %v\n  in %.200q\n out %.200q", rel, i+1, counts, line, out)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 || lines < 20000 {
		t.Fatalf("read %d files, %d lines: the walk missed the repository", files, lines)
	}
	t.Logf("%d files, %d lines: %d redacted (%.4f%%)", files, lines, hits, 100*float64(hits)/float64(lines))
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestFalsePositivesInRecordedTranscripts redacts the transcripts the five
// harnesses really wrote (fixtures/transcripts), in which the capture
// planted a few invented secrets: every line redacted holds a planted one,
// and with those taken out no line is redacted. So on real sessions each
// redaction is a true one.
func TestFalsePositivesInRecordedTranscripts(t *testing.T) {
	planted := []string{"AKIAIOSFODNN7EXAMPLE", "ghp_0123456789abcdefghijABCDEFGHIJ012345",
		"hunter2hunter2", "sk-test0123456789abcdefghij", "abcdefghij0123456789"}
	files, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "transcripts", "*", "*.jsonl"))
	if len(files) < 4 {
		t.Fatalf("found %d recorded transcripts", len(files))
	}
	lines, redacted := 0, 0
	rs := DefaultRules()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			lines++
			if _, counts := Text(line, rs); len(counts) > 0 {
				redacted++
			}
			for _, p := range planted {
				line = strings.ReplaceAll(line, p, "PLANTED")
			}
			if out, counts := Text(line, rs); len(counts) > 0 {
				t.Errorf("%s:%d: %v redacted in a line without a planted secret:\n%.300s", f, i+1, counts, out)
			}
		}
	}
	if redacted == 0 {
		t.Fatal("no planted secret was redacted")
	}
	t.Logf("%d files, %d lines: %d redacted, each for a planted secret", len(files), lines, redacted)
}
