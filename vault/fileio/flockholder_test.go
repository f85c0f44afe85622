package fileio

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gofrs/flock"
)

// TestFlockHolderWhileOthersLock asks for the holder of a held lock while
// other files' flocks come and go, as they do on a machine running many
// memvault processes: the kernel's table must be read in one piece, or an
// entry listed before the holder's that goes away between two reads shifts
// the holder's line past the reader, and a stale lease is believed.
func TestFlockHolderWhileOthersLock(t *testing.T) {
	root := t.TempDir()
	held := filepath.Join(root, "vault.lock")
	fl := flock.New(held)
	if err := fl.Lock(); err != nil {
		t.Fatal(err)
	}
	defer fl.Unlock()
	if FlockHolder(root, held) != os.Getpid() {
		t.Skip("the kernel's lock table does not name holders here")
	}
	// Enough other locks that the table spans many reads of a small buffer.
	dir := t.TempDir()
	var others []*flock.Flock
	for i := range 200 {
		o := flock.New(filepath.Join(dir, fmt.Sprintf("o%d", i)))
		if err := o.Lock(); err != nil {
			t.Fatal(err)
		}
		others = append(others, o)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Half the others go and come back: the entries listed
			// before the holder's shrink and grow.
			half := others[(i%2)*len(others)/2 : (i%2+1)*len(others)/2]
			for _, o := range half {
				o.Unlock()
			}
			for _, o := range half {
				o.Lock()
			}
		}
	}()
	defer func() {
		close(stop)
		<-done
		for _, o := range others {
			o.Unlock()
		}
	}()
	for i := range 1000 {
		if got := FlockHolder(root, held); got != os.Getpid() {
			t.Fatalf("read %d: the holder is %d, want this process (%d)", i, got, os.Getpid())
		}
	}
}
