package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gc"
	"github.com/memvault/memvault/vault/units"
)

// progressEnv forces what a terminal on stderr would decide: 1 draws
// progress and the gc hint on stderr whatever it is (the tests' way to see
// them), 0 draws neither even on a terminal. Unset, a terminal decides.
const progressEnv = "MEMVAULT_PROGRESS"

// progressEvery is the least time between two draws: at most ten a second,
// so that drawing never costs the work it reports on.
const progressEvery = 100 * time.Millisecond

// progressTick is how often the line is redrawn while the work reports
// nothing: a phase without a count shows its time, and a step the throttle
// held back is drawn.
const progressTick = 250 * time.Millisecond

// stderrTerminal reports whether the command's stderr is a terminal, and its
// width (80 when it cannot be read), after MEMVAULT_PROGRESS: forced on, it
// is a terminal 80 columns wide.
func stderrTerminal(stderr io.Writer) (bool, int) {
	switch os.Getenv(progressEnv) {
	case "1":
		return true, 80
	case "0":
		return false, 0
	}
	f, ok := stderr.(*os.File)
	if !ok {
		return false, 0
	}
	// TIOCGWINSZ answers only for a terminal: unlike a stat's character
	// device bit, it is false for /dev/null.
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return false, 0
	}
	if ws.Col == 0 {
		return true, 80
	}
	return true, int(ws.Col)
}

// startProgress makes v report its long work on stderr when stderr is a
// terminal and the output is text (--json is for programs: its progress is
// drawn only when MEMVAULT_PROGRESS=1 forces it). The returned stop clears
// the line; call it before printing the result, and again, harmlessly, in
// a defer.
func startProgress(e env, v *vault.Vault, json bool) (stop func()) {
	term, width := stderrTerminal(e.stderr)
	if !term || json && os.Getenv(progressEnv) != "1" {
		return func() {}
	}
	line := newProgressLine(e.stderr, width, time.Now)
	v.Progress = line.report
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(progressTick)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				line.tick()
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			v.Progress = nil
			line.finish()
		})
	}
}

// progressLine draws the latest step of long work on one line, rewritten in
// place (a carriage return, the text, then "clear to the end of the line"),
// at most once per progressEvery within a phase, and clears it when the
// work is done so that the command's own output starts on a clean line.
// The first step of each phase is drawn at once, whatever the throttle
// says: a phase shorter than progressEvery would otherwise never be seen
// (a small vault's reindex indexes its files in less), and a command has
// a handful of phases, so they cost nothing. The clock is
// injected so that its throttle is tested without sleeping.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	width int
	now   func() time.Time

	step    vault.Step
	has     bool
	phase   string    // step's phase without its counts (phaseOf)
	since   time.Time // when that phase began
	shown   string    // what the line shows, "" when it is clear
	drawnAt time.Time // when it was last drawn
}

func newProgressLine(w io.Writer, width int, now func() time.Time) *progressLine {
	return &progressLine{w: w, width: width, now: now}
}

// report takes a step of the work and draws it if it starts a phase, or
// if the line was drawn progressEvery ago or more; a step held back is
// drawn by the next report or tick.
func (p *progressLine) report(s vault.Step) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.now()
	phase := phaseOf(s.Phase)
	starts := !p.has || phase != p.phase
	if starts {
		p.phase, p.since = phase, t
	}
	p.step, p.has = s, true
	p.draw(t, starts)
}

// phaseOf is what tells one phase from the next: its name without digits
// and group separators. A phase may carry a count in its name ("import:
// 1,200 messages from s.jsonl") that grows with every step: that is a step
// of the same phase, not a new phase to draw at once.
func phaseOf(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r == ',' {
			return -1
		}
		return r
	}, name)
}

// tick redraws the latest step, for the time a long phase has taken.
func (p *progressLine) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.has {
		p.draw(p.now(), false)
	}
}

// finish clears the line. Nothing is written when nothing was drawn.
func (p *progressLine) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown != "" {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	p.shown, p.has = "", false
}

// draw writes the step unless it would write what the line shows already,
// or the line was drawn less than progressEvery ago and force is false.
func (p *progressLine) draw(t time.Time, force bool) {
	if !force && !p.drawnAt.IsZero() && t.Sub(p.drawnAt) < progressEvery {
		return
	}
	text := clip(progressText(p.step, t.Sub(p.since)), p.width-1)
	if text == p.shown {
		return
	}
	fmt.Fprintf(p.w, "\r%s\x1b[K", text)
	p.shown, p.drawnAt = text, t
}

// progressText is one step in words: the phase, the count out of the
// total with a percentage when the total is known, and the time the phase
// has taken once it passes a second.
//
//	gc: reading objects 12,345/40,000 objects (30%)
//	import: 1,200 messages from s.jsonl 3.0 MiB/12.0 MiB (25%) 2s
//	gc: git gc packing 7012 loose objects 12s
func progressText(s vault.Step, took time.Duration) string {
	text := s.Phase
	count := func(n int64) string {
		if s.Unit == "bytes" {
			return units.Bytes(n)
		}
		return units.Count(n)
	}
	switch {
	case s.Total > 0:
		text += fmt.Sprintf(" %s/%s", count(s.Done), count(s.Total))
		if s.Unit != "bytes" && s.Unit != "" {
			text += " " + s.Unit
		}
		text += fmt.Sprintf(" (%d%%)", s.Done*100/s.Total)
	case s.Done > 0:
		text += " " + count(s.Done)
		if s.Unit != "bytes" && s.Unit != "" {
			text += " " + s.Unit
		}
	}
	if took >= time.Second {
		text += " " + took.Truncate(time.Second).String()
	}
	return text
}

// clip cuts text to width runes, so that the line never wraps: a wrapped
// line cannot be rewritten in place.
func clip(text string, width int) string {
	if width <= 0 || utf8.RuneCountInString(text) <= width {
		return text
	}
	r := []rune(text)
	return string(r[:width-1]) + "…"
}

// gcAdvice prints, once after a command that wrote to the vault and only
// on a terminal, that the vault's loose git objects have passed the point
// where a gc pays (some 6,700, gc.Advice). The estimate reads one folder
// of .git (BenchmarkAdvice, vault/gc).
func gcAdvice(e env, v *vault.Vault) {
	if term, _ := stderrTerminal(e.stderr); !term {
		return
	}
	if a := gc.Advice(v); a != "" {
		fmt.Fprintf(e.stderr, "memvault: %s\n", a)
	}
}
