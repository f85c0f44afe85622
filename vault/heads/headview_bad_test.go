package heads

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

// TestDamagedViewBlockIsRebuilt: a thread's block of heads-view.bin that
// no longer reads (a flipped bit) is found when a later save copies it
// unread; the file is then dropped rather than kept, so the next reader
// rebuilds the view from the ledger and saves a sound one, instead of
// every save failing until that thread changes. The view read stays
// equal to the full fold throughout.
func TestDamagedViewBlockIsRebuilt(t *testing.T) {
	v := testvault.New(t)
	cfg, err := LoadHeadsConfig(v)
	if err != nil {
		t.Fatal(err)
	}
	remember := func(thread, text string) {
		t.Helper()
		if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
			_, err := memory.Remember(tx, memory.Input{Kind: "fact", Thread: thread, Text: text})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	load := func() *viewCache {
		t.Helper()
		vc, err := PreparedView(v, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return vc
	}
	remember("project:a", "the first thread's fact")
	remember("project:b", "the second thread's fact, long enough to make a block of some size")
	load()
	path := HeadViewFor(cfg).Path(v.Root)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the view was not saved: %v", err)
	}
	// The last block is project:b's (blocks are in the order of their
	// keys); its bytes end the file.
	i := bytes.LastIndex(data, []byte("long enough"))
	if i < 0 {
		t.Fatal("project:b's block not found at the end of the file")
	}
	data[i] ^= 0x20
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	damaged := append([]byte(nil), data...)

	// Enough new rows of project:a to make the view worth saving again;
	// project:b's block is copied unread.
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		for i := range 300 {
			if _, err := memory.Remember(tx, memory.Input{Kind: "fact", Thread: "project:a", Text: fmt.Sprintf("fact %d of the first thread", i)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	load()
	after, _ := os.ReadFile(path)
	if bytes.Equal(after, damaged) {
		t.Fatal("the damaged view was kept: every later save fails until project:b changes")
	}
	vc := load()
	vc.thread("project:b")
	if vc.bad {
		t.Fatal("project:b's block still does not read after a rebuild")
	}
	if got, err := os.ReadFile(path); err != nil || bytes.Contains(got, []byte("Long enough")) {
		t.Fatalf("the view was not saved sound again (%v)", err)
	}
	segs, _, err := vault.ListSegments(v.Root)
	if err != nil {
		t.Fatal(err)
	}
	full, _, _, err := v.FoldAll(segs)
	if err != nil {
		t.Fatal(err)
	}
	for _, thread := range []string{"", "project:a", "project:b"} {
		got, err := RenderHead(vc.View(cfg), HeadTarget{Thread: thread})
		if err != nil {
			t.Fatal(err)
		}
		want, err := RenderHead(BuildView(full, cfg), HeadTarget{Thread: thread})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes, want.Bytes) {
			t.Fatalf("head %q from the view differs from the full fold's:\n%s\nwant\n%s", thread, got.Bytes, want.Bytes)
		}
	}
}
