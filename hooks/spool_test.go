package hooks

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/transcript"
)

// With the vault lock held past the hooks' waits, each harness's prompt
// and the reply its stop carries (no transcript file) are spooled, the log
// says so, and the next write stores them in the order they came, once.
func TestBusyHooksSpoolPromptsAndReplies(t *testing.T) {
	v := healthVault(t)
	fl := flock.New(filepath.Join(v.Root, ".locks", "vault.lock"))
	if err := fl.Lock(); err != nil {
		t.Fatal(err)
	}
	// The harnesses in parallel, each a session of prompt, reply, prompt:
	// every hook waits its whole wait.
	want := map[string][]string{}
	var wg sync.WaitGroup
	for _, name := range Names() {
		h := mustHarness(t, name)
		session := "busy-" + h.Name
		texts := []string{h.Name + " prompt 1", h.Name + " reply 1", h.Name + " prompt 2"}
		want[session] = texts
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, text := range texts {
				r := &Runner{V: v, Harness: h, Agent: "default", Start: time.Now()}
				var err error
				if i == 1 {
					// The reply is spooled; the stop's control lines wait.
					if _, err = r.Run(Stop, Payload{SessionID: session, LastAssistant: text}); vault.IsBusy(err) {
						err = nil
					}
				} else {
					_, err = r.Run(PromptSubmit, Payload{SessionID: session, Prompt: text})
				}
				if err != nil {
					t.Errorf("%s %q on a busy vault: %v", h.Name, text, err)
				}
			}
		}()
	}
	wg.Wait()
	log, _ := os.ReadFile(filepath.Join(v.Root, ".logs", "hooks.log"))
	for _, name := range Names() {
		for _, what := range []string{"prompt-submit busy-" + name + ": vault busy: held by pid ", "the prompt is spooled",
			"stop busy-" + name + ": vault busy", "the reply is spooled"} {
			if !strings.Contains(string(log), what) {
				t.Errorf("hooks.log does not say %q:\n%s", what, log)
			}
		}
	}
	if err := fl.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		_, err := memory.Remember(tx, memory.Input{Text: "the next write"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for session, texts := range want {
		var got []string
		err := transcript.Read(v.Files(), transcript.Ref{Agent: "default", Session: session}, 1, 0, func(m transcript.Stored) error {
			got = append(got, m.Text)
			return nil
		})
		if err != nil || !slices.Equal(got, texts) {
			t.Errorf("session %s holds %q (%v), want %q", session, got, err, texts)
		}
	}
}
