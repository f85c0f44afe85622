package hookstate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
)

func enqueue(t *testing.T, v *vault.Vault, jobs ...Job) {
	t.Helper()
	for _, j := range jobs {
		if err := EnqueueJob(v, j); err != nil {
			t.Fatal(err)
		}
	}
}

func drain(t *testing.T, c *JobClaim) []string {
	t.Helper()
	var got []string
	for {
		j, ok, err := c.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return got
		}
		got = append(got, j.Session)
		if err := c.Done(j); err != nil {
			t.Fatal(err)
		}
	}
}

// Jobs come out in the order they went in, even when queued within one
// tick of the clock, and keep the file format older binaries read.
func TestJobQueueOrder(t *testing.T) {
	v := testvault.New(t)
	var want []string
	for i := range 50 {
		s := fmt.Sprint(i)
		want = append(want, s)
		enqueue(t, v, Job{Kind: []string{"summarize", "refresh"}[i%2], Agent: "a", Session: s})
	}
	pending, err := PendingJobs(v)
	if err != nil || len(pending) != len(want) {
		t.Fatalf("pending: %d jobs, %v", len(pending), err)
	}
	c, err := ClaimJobs(v, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if got := drain(t, c); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if pending, _ := PendingJobs(v); len(pending) != 0 {
		t.Fatalf("%d jobs left after all were done", len(pending))
	}
}

func TestJobFileFormat(t *testing.T) {
	v := testvault.New(t)
	enqueue(t, v, Job{Kind: "refresh", Agent: "a", Session: "s", Harness: "codex", On: "compaction"})
	ents, err := os.ReadDir(filepath.Join(v.Root, ".state", "jobs"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("queue dir: %v %v", ents, err)
	}
	var stamp int64
	if _, err := fmt.Sscanf(ents[0].Name(), "%d-refresh.json", &stamp); err != nil {
		t.Fatalf("name %q: %v", ents[0].Name(), err)
	}
	data, _ := os.ReadFile(filepath.Join(v.Root, ".state", "jobs", ents[0].Name()))
	if want := `{"kind":"refresh","agent":"a","session":"s","harness":"codex","on":"compaction"}`; string(data) != want {
		t.Fatalf("content %s, want %s", data, want)
	}
	if err := EnqueueJob(v, Job{Kind: "../x"}); err == nil {
		t.Fatal("a kind with a path separator was queued")
	}
}

// Two runners at once: one holds the queue, the other waits or gives up
// busy; every job runs exactly once.
func TestJobClaimIsExclusive(t *testing.T) {
	v := testvault.New(t)
	const n = 40
	for i := range n {
		enqueue(t, v, Job{Kind: "summarize", Agent: "a", Session: fmt.Sprint(i)})
	}
	held, err := ClaimJobs(v, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ClaimJobs(v, 20*time.Millisecond); !vault.IsBusy(err) {
		t.Fatalf("a second claim while the first is held: %v, want busy", err)
	}
	held.Release()

	var mu sync.Mutex
	runs := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := ClaimJobs(v, 10*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Release()
			for {
				j, ok, err := c.Next()
				if err != nil || !ok {
					return
				}
				mu.Lock()
				runs[j.Session]++
				mu.Unlock()
				time.Sleep(time.Millisecond) // a job takes a while: let the others try
				if err := c.Done(j); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if len(runs) != n {
		t.Fatalf("%d jobs ran, want %d", len(runs), n)
	}
	for s, k := range runs {
		if k != 1 {
			t.Errorf("job %s ran %d times", s, k)
		}
	}
}

// A job handed out and not done (its runner gave up, the vault was busy)
// stays queued for the next claim, and the same claim does not hand it out
// again; a file that is not a job is dropped.
func TestJobNotDoneStaysQueued(t *testing.T) {
	v := testvault.New(t)
	enqueue(t, v, Job{Kind: "summarize", Agent: "a", Session: "1"}, Job{Kind: "refresh", Agent: "a", Session: "2"})
	if err := os.WriteFile(filepath.Join(v.Root, ".state", "jobs", "0-junk.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ClaimJobs(v, 0)
	if err != nil {
		t.Fatal(err)
	}
	first, ok, err := c.Next()
	if err != nil || !ok || first.Session != "1" {
		t.Fatalf("first job %+v %v %v", first, ok, err)
	}
	second, ok, _ := c.Next()
	if !ok || second.Session != "2" {
		t.Fatalf("the claim handed out %+v after a job not done, want session 2", second)
	}
	if _, ok, _ := c.Next(); ok {
		t.Fatal("the claim handed a job out twice")
	}
	c.Done(second)
	c.Release()
	if _, err := os.Stat(filepath.Join(v.Root, ".state", "jobs", "0-junk.json")); err == nil {
		t.Error("the file that is no job is still queued")
	}
	c, _ = ClaimJobs(v, 0)
	defer c.Release()
	if got := drain(t, c); fmt.Sprint(got) != "[1]" {
		t.Fatalf("the next claim ran %v, want the job not done [1]", got)
	}
}

// A runner killed mid-job: its claim dies with it, and the next runner
// gets the job it was running.
func TestJobRunnerCrash(t *testing.T) {
	if root := os.Getenv("MEMVAULT_TEST_JOB_CRASH"); root != "" {
		crashingRunner(root)
		return
	}
	v := testvault.New(t)
	enqueue(t, v, Job{Kind: "summarize", Agent: "a", Session: "1"}, Job{Kind: "refresh", Agent: "a", Session: "2"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestJobRunnerCrash$")
	cmd.Env = append(os.Environ(), "MEMVAULT_TEST_JOB_CRASH="+v.Root)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(v.Root, ".state", "test-job-started")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the runner never started its job")
		}
	}
	if _, err := ClaimJobs(v, 20*time.Millisecond); !vault.IsBusy(err) {
		t.Fatalf("claim while another process runs the queue: %v, want busy", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	c, err := ClaimJobs(v, time.Second)
	if err != nil {
		t.Fatalf("claim after the runner died: %v", err)
	}
	defer c.Release()
	if got := drain(t, c); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("after the crash the queue ran %v, want [1 2]", got)
	}
}

// crashingRunner claims the queue, takes its first job, says so, and
// hangs until it is killed.
func crashingRunner(root string) {
	v, err := vault.Open(root)
	if err != nil {
		panic(err)
	}
	c, err := ClaimJobs(v, time.Second)
	if err != nil {
		panic(err)
	}
	if _, ok, err := c.Next(); !ok || err != nil {
		panic(fmt.Sprint("no job: ", err))
	}
	if err := os.WriteFile(filepath.Join(root, ".state", "test-job-started"), nil, 0o600); err != nil {
		panic(err)
	}
	select {}
}
