package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/units"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock           { return &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }
func draws(out *bytes.Buffer) int        { return strings.Count(out.String(), "\x1b[K") }
func shown(out *bytes.Buffer) string     { s := out.String(); return s[strings.LastIndex(s, "\r")+1:] }
func step(phase string, done, total int64) vault.Step {
	return vault.Step{Phase: phase, Done: done, Total: total, Unit: "objects"}
}

// TestProgressThrottle: a thousand reports a millisecond apart draw at most
// ten times a second (the first at once), and the last one held back is
// drawn by the next tick.
func TestProgressThrottle(t *testing.T) {
	clock := newFakeClock()
	var out bytes.Buffer
	p := newProgressLine(&out, 80, clock.now)
	for i := int64(1); i <= 1000; i++ {
		p.report(step("gc: reading objects", i, 1000))
		clock.add(time.Millisecond)
	}
	// 1 s of reports: drawn at 0, 100, …, 900 ms.
	if n := draws(&out); n < 1 || n > 10 {
		t.Fatalf("%d draws in a second of reports, want 1–10:\n%q", n, out.String())
	}
	if !strings.HasPrefix(out.String(), "\rgc: reading objects 1/1,000 objects (0%)\x1b[K") {
		t.Errorf("the first report is not drawn at once: %q", out.String())
	}
	if got := shown(&out); strings.Contains(got, "1,000/1,000") {
		t.Fatalf("the last report came 1 ms after a draw and was drawn anyway: %q", got)
	}
	n := draws(&out)
	p.tick() // 100 ms after the last draw: the held-back step is drawn
	if draws(&out) != n+1 || !strings.Contains(shown(&out), "1,000/1,000 objects (100%)") {
		t.Fatalf("tick did not draw the held-back step: %q", shown(&out))
	}
	p.tick() // nothing new, and too soon
	clock.add(time.Second)
	n = draws(&out)
	p.tick() // nothing new to say but the time: a phase of known total shows it past a second
	if draws(&out) != n+1 || !strings.HasSuffix(shown(&out), "(100%) 2s\x1b[K") {
		t.Errorf("after a quiet second: %q", shown(&out))
	}
}

// TestProgressDrawsEveryPhase: phases that begin and end between two
// draws of the throttle are each drawn when they begin, so that a person
// sees every phase and a test can wait for one without a race; a phase
// whose name carries a growing count is one phase, throttled as any other.
func TestProgressDrawsEveryPhase(t *testing.T) {
	clock := newFakeClock()
	var out bytes.Buffer
	p := newProgressLine(&out, 80, clock.now)
	phases := []vault.Step{
		{Phase: "reindex: listing files"},
		step("reindex: indexing files", 1, 3),
		step("reindex: indexing files", 3, 3),
		{Phase: "reindex: merging the lineage index"},
		step("reindex: indexing files", 3, 3),
		{Phase: "reindex: merging the transcripts index"},
	}
	for _, s := range phases {
		p.report(s)
		clock.add(time.Millisecond)
	}
	want := "\rreindex: listing files\x1b[K" +
		"\rreindex: indexing files 1/3 objects (33%)\x1b[K" +
		"\rreindex: merging the lineage index\x1b[K" +
		"\rreindex: indexing files 3/3 objects (100%)\x1b[K" +
		"\rreindex: merging the transcripts index\x1b[K"
	if out.String() != want {
		t.Fatalf("phases a millisecond apart drew\n%q\nwant\n%q", out.String(), want)
	}

	// An import names its phase with the messages read so far: a thousand
	// steps a millisecond apart are one phase, drawn at most ten times a
	// second, and its time counts from its first step.
	out.Reset()
	for i := int64(1); i <= 1000; i++ {
		p.report(vault.Step{Phase: fmt.Sprintf("import: %s messages from s1.jsonl", units.Count(i*10)), Done: i, Total: 1000, Unit: "bytes"})
		clock.add(time.Millisecond)
	}
	if n := draws(&out); n < 1 || n > 10 {
		t.Fatalf("%d draws in a second of one import's steps, want 1–10:\n%q", n, out.String())
	}
	clock.add(100 * time.Millisecond)
	p.tick()
	if got := shown(&out); got != "import: 10,000 messages from s1.jsonl 1000 B/1000 B (100%) 1s\x1b[K" {
		t.Errorf("the import's last step after 1.1 s: %q", got)
	}
}

// TestProgressPhaseWithoutCount: a phase whose total is unknown shows its
// time as ticks come, and a new phase starts its time again.
func TestProgressPhaseWithoutCount(t *testing.T) {
	clock := newFakeClock()
	var out bytes.Buffer
	p := newProgressLine(&out, 80, clock.now)
	p.report(vault.Step{Phase: "gc: finding deltas"})
	if got := shown(&out); got != "gc: finding deltas\x1b[K" {
		t.Fatalf("first draw %q", got)
	}
	for range 12 {
		clock.add(250 * time.Millisecond)
		p.tick()
	}
	if got := shown(&out); got != "gc: finding deltas 3s\x1b[K" {
		t.Errorf("after 3 s: %q", got)
	}
	if n := draws(&out); n != 4 { // at 0, 1, 2 and 3 s: the text changes once a second
		t.Errorf("%d draws for 3 s of one phase, want 4: %q", n, out.String())
	}
	clock.add(time.Second)
	p.report(vault.Step{Phase: "gc: writing the pack", Done: 3 << 20, Unit: "bytes"})
	if got := shown(&out); got != "gc: writing the pack 3.0 MiB\x1b[K" {
		t.Errorf("new phase: %q", got)
	}
}

// TestProgressFinish: finish clears a drawn line, so that what the command
// prints next starts clean; it writes nothing when nothing was drawn, and
// a second finish writes nothing more.
func TestProgressFinish(t *testing.T) {
	clock := newFakeClock()
	var out bytes.Buffer
	p := newProgressLine(&out, 80, clock.now)
	p.finish()
	if out.Len() != 0 {
		t.Fatalf("finish without a draw wrote %q", out.String())
	}
	p.report(step("reindex: indexing files", 1, 2))
	p.finish()
	if !strings.HasSuffix(out.String(), "\r\x1b[K") {
		t.Fatalf("finish did not clear the line: %q", out.String())
	}
	n := out.Len()
	p.finish()
	p.tick()
	if out.Len() != n {
		t.Errorf("after finish, more was written: %q", out.String()[n:])
	}
}

// TestProgressText: counts in groups of three, bytes in binary units, a
// percentage of a known total, and a line never wider than the terminal
// (a wrapped line cannot be rewritten in place).
func TestProgressText(t *testing.T) {
	for _, c := range []struct {
		s    vault.Step
		took time.Duration
		want string
	}{
		{step("gc: reading objects", 12345, 40000), 0, "gc: reading objects 12,345/40,000 objects (30%)"},
		{vault.Step{Phase: "import: 10 messages from s.jsonl", Done: 3 << 20, Total: 12 << 20, Unit: "bytes"}, 2500 * time.Millisecond,
			"import: 10 messages from s.jsonl 3.0 MiB/12.0 MiB (25%) 2s"},
		{vault.Step{Phase: "gc: finding reachable objects", Done: 7000, Unit: "objects"}, 0, "gc: finding reachable objects 7,000 objects"},
		{vault.Step{Phase: "sync: fetching from origin"}, 999 * time.Millisecond, "sync: fetching from origin"},
		{vault.Step{Phase: "gc: git gc packing 21005 loose objects"}, 61 * time.Second, "gc: git gc packing 21005 loose objects 1m1s"},
	} {
		if got := progressText(c.s, c.took); got != c.want {
			t.Errorf("%+v after %s:\n got %q\nwant %q", c.s, c.took, got, c.want)
		}
	}
	clock := newFakeClock()
	var out bytes.Buffer
	p := newProgressLine(&out, 30, clock.now)
	p.report(vault.Step{Phase: "import: 1,200 messages from a-very-long-session-file-name.jsonl", Done: 1, Total: 2, Unit: "bytes"})
	text := strings.TrimSuffix(shown(&out), "\x1b[K")
	if n := utf8.RuneCountInString(text); n > 29 || !strings.HasSuffix(text, "…") {
		t.Errorf("a 30-column terminal got %d columns: %q", n, text)
	}
}

// TestProgressOnlyOnATerminal: a buffer, a pipe and /dev/null (a character
// device, which a stat alone would take for a terminal) are not terminals;
// MEMVAULT_PROGRESS=1 makes any stderr one, 0 none. --json draws nothing
// unless forced.
func TestProgressOnlyOnATerminal(t *testing.T) {
	ctx := func(w io.Writer) env { return env{stderr: w} }
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	t.Setenv(progressEnv, "")
	for name, w := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "/dev/null": devNull, "pipe": w} {
		if term, _ := stderrTerminal(w); term {
			t.Errorf("%s taken for a terminal", name)
		}
	}
	t.Setenv(progressEnv, "1")
	if term, width := stderrTerminal(devNull); !term || width != 80 {
		t.Errorf("forced: %v, %d columns", term, width)
	}
	t.Setenv(progressEnv, "0")
	if term, _ := stderrTerminal(&bytes.Buffer{}); term {
		t.Errorf("forced off, still a terminal")
	}

	v := &vault.Vault{}
	var buf bytes.Buffer
	t.Setenv(progressEnv, "")
	stop := startProgress(ctx(&buf), v, false)
	if v.Progress != nil {
		t.Errorf("not a terminal: a Progress was set")
	}
	stop()
	t.Setenv(progressEnv, "1")
	stop = startProgress(ctx(&buf), v, false)
	if v.Progress == nil {
		t.Fatal("forced: no Progress")
	}
	v.Progress(vault.Step{Phase: "verify: checking the ledger", Done: 1, Total: 1, Unit: "segments"})
	stop()
	stop()
	if v.Progress != nil || !strings.Contains(buf.String(), "verify: checking the ledger 1/1 segments (100%)") ||
		!strings.HasSuffix(buf.String(), "\r\x1b[K") {
		t.Errorf("forced: %q, Progress left set: %v", buf.String(), v.Progress != nil)
	}
	stop = startProgress(ctx(&buf), v, true)
	if v.Progress == nil {
		t.Error("--json with MEMVAULT_PROGRESS=1: no Progress")
	}
	stop()
}
