package vault

import (
	"sync"
	"testing"
)

// A vault's slot is made once, whoever asks first, and is the vault's own:
// the same key on another open vault, or another key, is another slot.
func TestVaultSlot(t *testing.T) {
	type keyA struct{}
	type keyB struct{}
	v := newVault(t)
	var made sync.WaitGroup
	got := make([]*int, 8)
	inits := 0
	for i := range got {
		made.Add(1)
		go func() {
			defer made.Done()
			got[i] = v.Slot(keyA{}, func() any { inits++; return new(int) }).(*int)
		}()
	}
	made.Wait()
	if inits != 1 {
		t.Fatalf("init ran %d times, want once", inits)
	}
	for _, p := range got {
		if p != got[0] {
			t.Fatal("two callers got two slots for one key")
		}
	}
	if b := v.Slot(keyB{}, func() any { return new(int) }).(*int); b == got[0] {
		t.Fatal("another key shares the slot")
	}
	other, err := Open(v.Root)
	if err != nil {
		t.Fatal(err)
	}
	if o := other.Slot(keyA{}, func() any { return new(int) }).(*int); o == got[0] {
		t.Fatal("another open vault shares the slot")
	}
}
