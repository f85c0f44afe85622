package vault

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/memvault/memvault/vault/fileio"
)

// holdInTx holds the vault lock inside a transaction of command until the
// returned function is called.
func holdInTx(t *testing.T, v *Vault, command string) (release func()) {
	t.Helper()
	held, done := make(chan struct{}), make(chan struct{})
	finished := make(chan error, 1)
	go func() {
		_, err := v.Update(TxOptions{Command: command, Session: "s-hold"}, func(tx *Tx) error {
			close(held)
			<-done
			return nil
		})
		finished <- err
	}()
	<-held
	return func() {
		close(done)
		if err := <-finished; err != nil {
			t.Errorf("the holding transaction: %v", err)
		}
	}
}

// The busy message names the transaction that holds the lock, with its
// pid, command, session and how long it has held it; once it lets go, the
// lease is gone and nobody is named.
func TestBusyNamesTheHolder(t *testing.T) {
	v := newVault(t)
	release := holdInTx(t, v, "render")
	_, err := v.Update(TxOptions{LockTimeout: 30 * time.Millisecond}, func(tx *Tx) error { return nil })
	want := regexp.MustCompile(fmt.Sprintf(`^vault busy: held by pid %d \(memvault render, session s-hold, [0-9.]+ m?s\); gave up after 30ms$`, os.Getpid()))
	if !IsBusy(err) || !want.MatchString(err.Error()) {
		t.Fatalf("got %v, want %s", err, want)
	}
	l, held := ReadLease(v.Root)
	if !held || l.PID != os.Getpid() || l.Command != "render" {
		t.Fatalf("ReadLease: %+v, held %v", l, held)
	}
	release()
	if data, err := os.ReadFile(filepath.Join(v.Root, leaseFile)); err == nil && len(data) > 0 {
		t.Fatalf("the lease outlived the lock: %q", data)
	}
	if l, held := ReadLease(v.Root); held || l.PID != 0 {
		t.Fatalf("after the release: %+v, held %v", l, held)
	}
}

// A lease is not believed unless the process it names holds the lock: a
// lease a killed memvault left, while something else holds the lock, names
// the real holder where the kernel says who it is (Linux), and nobody
// otherwise.
func TestBusyIgnoresAStaleLease(t *testing.T) {
	v := newVault(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true(1) to make a dead pid with")
	}
	other := exec.Command("sleep", "60") // alive, and not the holder
	if err := other.Start(); err != nil {
		t.Skip("no sleep(1)")
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	host, _ := os.Hostname()

	fl := flock.New(filepath.Join(v.Root, lockFile))
	if err := fl.Lock(); err != nil {
		t.Fatal(err)
	}
	defer fl.Unlock()
	kernelKnows := fileio.FlockHolder(v.Root, filepath.Join(v.Root, lockFile)) == os.Getpid()
	t.Logf("the kernel names the holder: %v", kernelKnows)

	for _, c := range []struct {
		name  string
		pid   int
		trust bool // believed when the kernel does not say
	}{
		{"a dead process", dead.Process.Pid, false},
		{"a live process that is not the holder", other.Process.Pid, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			lease, _ := json.Marshal(Lease{PID: c.pid, Host: host, Command: "remember", Since: time.Now().Add(-time.Hour)})
			if err := os.WriteFile(filepath.Join(v.Root, leaseFile), lease, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := v.Update(TxOptions{LockTimeout: 10 * time.Millisecond}, func(tx *Tx) error { return nil })
			want := "vault busy: held by an unknown process; gave up after 10ms"
			switch {
			case kernelKnows:
				want = fmt.Sprintf("vault busy: held by pid %d (no lease: not memvault, or it has just taken the lock); gave up after 10ms", os.Getpid())
			case c.trust:
				t.Skip("without the kernel's table, a live process's lease is believed")
			}
			if !IsBusy(err) || err.Error() != want {
				t.Fatalf("got %v\nwant %s", err, want)
			}
			if l, held := ReadLease(v.Root); !held || l.PID == c.pid {
				t.Fatalf("ReadLease believed the stale lease: %+v", l)
			}
		})
	}
}

func TestHeldFor(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		ago  time.Duration
		want string
	}{
		{350 * time.Millisecond, `^3[0-9]{2} ms$`},
		{1200 * time.Millisecond, `^1\.[0-9] s$`},
		{200 * time.Second, `^3m2[0-9]s$`},
		{-time.Hour, `^since 20`},
	} {
		if got := HeldFor(now.Add(-c.ago)); !regexp.MustCompile(c.want).MatchString(got) {
			t.Errorf("held for %v: %q, want %s", c.ago, got, c.want)
		}
	}
	if s := (Lease{}).String(); s != "an unknown process" {
		t.Errorf("an empty lease reads %q", s)
	}
	if s := (Lease{PID: 7, Host: "elsewhere", Command: "sync"}).String(); s != "pid 7 on elsewhere (memvault sync)" {
		t.Errorf("another host's lease reads %q", s)
	}
}

// A person's write that meets the automatic pack waits for it past its own
// wait (a pack of a large vault outlasts the default 10 s); behind any
// other holder, and for a hook's short wait, it gives up as before.
func TestWriterWaitsBehindTheAutomaticPack(t *testing.T) {
	for _, c := range []struct {
		name    string
		command string
		wait    time.Duration
		ok      bool
	}{
		{"the automatic pack, a person's wait", autoPackCommand, time.Second, true},
		{"the automatic pack, a hook's wait", autoPackCommand, 300 * time.Millisecond, false},
		{"another holder, a person's wait", "render", time.Second, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := newVault(t)
			fl := flock.New(filepath.Join(v.Root, lockFile))
			if err := fl.Lock(); err != nil {
				t.Fatal(err)
			}
			host, _ := os.Hostname()
			lease, _ := json.Marshal(Lease{PID: os.Getpid(), Host: host, Command: c.command, Since: time.Now()})
			if err := os.WriteFile(filepath.Join(v.Root, leaseFile), lease, 0o600); err != nil {
				t.Fatal(err)
			}
			release := func() {
				os.Remove(filepath.Join(v.Root, leaseFile))
				fl.Unlock()
			}
			if c.ok {
				// The pack ends after twice the writer's wait.
				go func() { time.Sleep(2 * c.wait); release() }()
			} else {
				defer release() // only once the writer gave up
			}
			_, err := v.Update(TxOptions{LockTimeout: c.wait}, func(tx *Tx) error { return nil })
			if c.ok && err != nil {
				t.Fatalf("the write gave up behind the pack: %v", err)
			}
			if !c.ok && !IsBusy(err) {
				t.Fatalf("got %v, want busy after %s", err, c.wait)
			}
		})
	}
}
