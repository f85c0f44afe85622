package hooks

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/testvault"
)

// The background worker, end to end: hooks start this test binary as
// the worker (TestJobWorkerProcess), detached and handed the worker lock
// as `memvault jobs run --background` is, against the fake executor in
// its flaky mode, whose every run asks the test (a gate) whether to
// answer: a run the test holds is an executor that hangs for as long as
// the test likes.

// TestJobWorkerProcess is the worker process of these tests, not a test:
// it runs only as a child a hook started (MEMVAULT_TEST_WORKER names the
// vault). It tells the gate "spawned" when it starts, and "worker" once it
// holds the worker lock.
func TestJobWorkerProcess(t *testing.T) {
	root := os.Getenv("MEMVAULT_TEST_WORKER")
	if root == "" {
		t.Skip("the worker process of the worker tests")
	}
	tellGate(os.Getenv("MEMVAULT_TEST_WORKER_GATE"), "spawned")
	v, err := vault.OpenForCapture(root)
	if err != nil {
		LogTo(root, "test worker: "+err.Error())
		os.Exit(1)
	}
	w, err := hookstate.AdoptJobWorker(v, 3)
	if err != nil {
		LogTo(root, "test worker: "+err.Error())
		os.Exit(1)
	}
	tellGate(os.Getenv("MEMVAULT_TEST_WORKER_GATE"), fmt.Sprintf("worker %d", os.Getpid()))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if _, err := Work(ctx, v, w, WorkOptions{Background: true}); err != nil {
		LogTo(root, "test worker: "+err.Error())
	}
	os.Exit(0)
}

func tellGate(sock, msg string) {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return
	}
	defer c.Close()
	fmt.Fprintln(c, msg)
	bufio.NewReader(c).ReadString('\n')
}

// gate serves the fake's -notify socket and the test worker's: it
// counts each message by its first word; "worker" is answered at once,
// "run" (the flaky fake asking whether to answer) waits for the test's
// word, given through release.
type gate struct {
	mu    sync.Mutex
	count map[string]int
	runs  chan chan string // a run waiting: send it "ok" (answer) or anything else (crash)
}

func newGate(t *testing.T) (string, *gate) {
	t.Helper()
	dir, err := os.MkdirTemp("", "mvg") // short: a socket's path is bounded
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{count: map[string]int{}, runs: make(chan chan string, 16)}
	var conns sync.WaitGroup
	quit := make(chan struct{})
	t.Cleanup(func() {
		close(quit) // every run still held crashes
		l.Close()
		conns.Wait()
		os.RemoveAll(dir)
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				line, err := bufio.NewReader(c).ReadString('\n')
				if err != nil {
					return
				}
				word, _, _ := strings.Cut(strings.TrimSpace(line), " ")
				g.mu.Lock()
				g.count[word]++
				g.mu.Unlock()
				answer := "ok"
				if word == "run" {
					reply := make(chan string, 1)
					g.runs <- reply
					select {
					case answer = <-reply:
					case <-quit:
						answer = "stop"
					}
				}
				fmt.Fprintln(c, answer)
			}()
		}
	}()
	return sock, g
}

func (g *gate) n(word string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.count[word]
}

// nextRun waits for the next run of the executor and returns its reply
// channel.
func (g *gate) nextRun(t *testing.T) chan string {
	t.Helper()
	select {
	case r := <-g.runs:
		return r
	case <-time.After(time.Minute):
		t.Fatal("the executor was never run")
		return nil
	}
}

// waitFor polls cond until it holds, failing the test after a minute:
// a bound on a wait, not a measure of speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}

// workerVault is summarisingVault with the fake in flaky mode told to
// the gate, and the runner's worker this test binary.
func workerVault(t *testing.T) (*vault.Vault, string, *gate, func(ev Event, p Payload)) {
	t.Helper()
	sock, g := newGate(t)
	v, root := summarisingVault(t, fakeExecutor(t), "flaky", sock, "10m")
	worker := []string{"env", "MEMVAULT_TEST_WORKER=" + v.Root, "MEMVAULT_TEST_WORKER_GATE=" + sock,
		os.Args[0], "-test.run=^TestJobWorkerProcess$", "-test.count=1"}
	run := func(ev Event, p Payload) {
		t.Helper()
		h, _ := Lookup("claude-code")
		r := &Runner{V: v, Harness: h, Agent: "default", Start: time.Now(), Worker: worker}
		if _, err := r.Run(ev, p); err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
	}
	t.Cleanup(func() {
		// No worker outlives its test: a worker still running is stopped
		// (its held run crashes once the gate closes).
		if s := hookstate.JobWorkerStatus(v); s.Running && s.PID > 0 && s.PID != os.Getpid() {
			syscall.Kill(s.PID, syscall.SIGKILL)
		}
	})
	return v, root, g, run
}

// A hook never waits for the model: the session end that queues a
// summary starts the worker and returns while the executor is held; a
// prompt submit and a session start never start one; further events while
// it runs start no second worker (the worker lock, taken by the hook
// before it starts one) and the job is asked for once; the summary lands
// after the hooks returned, the worker exits, and the queue is empty.
func TestWorkerHookNeverWaits(t *testing.T) {
	v, root, g, run := workerVault(t)
	run(SessionStart, Payload{SessionID: "s1", CWD: root, Source: "startup"})
	run(PromptSubmit, Payload{SessionID: "s1", CWD: root, Prompt: "make the cache thread-safe"})
	if g.n("spawned") != 0 || hookstate.JobWorkerStatus(v).Running {
		t.Fatal("a prompt or a session start started a worker")
	}

	// A descriptor the hook was started with, as a harness's pipe that it
	// reads until its end: not close-on-exec, as a child inherits it.
	var pipe [2]int
	if err := syscall.Pipe(pipe[:]); err != nil {
		t.Fatal(err)
	}
	harnessEnd := os.NewFile(uintptr(pipe[0]), "harness")
	defer harnessEnd.Close()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		run(SessionEnd, Payload{SessionID: "s1", CWD: root, LastAssistant: "a mutex around the map"})
	}()
	held := g.nextRun(t) // the executor runs, and hangs until told
	select {
	case <-ended:
	case <-time.After(time.Minute):
		t.Fatal("the session end waited for the executor")
	}
	// The hook is done with the pipe: the harness reads its end, and the
	// worker, still running, holds no copy of it.
	syscall.Close(pipe[1])
	eof := make(chan struct{})
	go func() { io.Copy(io.Discard, harnessEnd); close(eof) }()
	select {
	case <-eof:
	case <-time.After(time.Minute):
		t.Fatalf("the hook's inherited descriptor is held open: the harness waits for\n%s", strings.Join(holders(pipe[0]), "\n"))
	}
	if n := sessionNode(t, v, "s1"); n != nil {
		t.Fatalf("a summary before the executor answered: %+v", n)
	}
	for range 3 {
		run(Stop, Payload{SessionID: "s2", CWD: root, LastAssistant: "another turn"})
		run(CompactionComplete, Payload{SessionID: "s2", CWD: root, CompactSummary: "compacted"})
	}
	if s := hookstate.JobWorkerStatus(v); !s.Running {
		t.Fatalf("no worker while the executor hangs: %+v", s)
	}
	held <- "ok"
	waitFor(t, "the model's summary", func() bool { n := sessionNode(t, v, "s1"); return n != nil })
	waitFor(t, "the worker to exit", func() bool { return !hookstate.JobWorkerStatus(v).Running })
	n := sessionNode(t, v, "s1")
	if n.Summary != node.SummaryModel || !strings.Contains(n.Body, "done after retries") {
		t.Fatalf("node %+v", n)
	}
	if g.n("spawned") != 1 || g.n("worker") != 1 || g.n("run") != 1 {
		t.Errorf("%d workers started, %d held the lock, %d runs of the executor", g.n("spawned"), g.n("worker"), g.n("run"))
	}
	if k := jobKinds(t, v); len(k) != 0 {
		t.Errorf("left queued: %v", k)
	}
	soundVault(t, v)
}

// A worker killed (SIGKILL) while the executor runs leaves the job queued
// with its attempt counted, and the lock free (the executor, still
// running, does not hold it); the next event starts a new worker, which
// asks again and writes the model's summary.
func TestWorkerKilledLosesNoJob(t *testing.T) {
	v, root, g, run := workerVault(t)
	run(PromptSubmit, Payload{SessionID: "s1", CWD: root, Prompt: "add a retry to the webhook"})
	run(SessionEnd, Payload{SessionID: "s1", CWD: root, LastAssistant: "retried three times"})
	orphan := g.nextRun(t)
	s := hookstate.JobWorkerStatus(v)
	if !s.Running || s.PID <= 0 || s.PID == os.Getpid() {
		t.Fatalf("worker %+v", s)
	}
	if err := syscall.Kill(s.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed worker's lock to go", func() bool { return !hookstate.JobWorkerStatus(v).Running })
	jobs, err := hookstate.PendingJobs(v)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 || jobs[0].Kind != "summarize" || jobs[0].Attempts != 1 {
		t.Fatalf("queue after the kill: %+v", jobs)
	}
	if n := sessionNode(t, v, "s1"); n != nil {
		t.Fatalf("a summary from a killed worker: %+v", n)
	}
	orphan <- "no" // the killed worker's executor gives up on its own

	run(Stop, Payload{SessionID: "s2", CWD: root, LastAssistant: "next turn"})
	g.nextRun(t) <- "ok"
	waitFor(t, "the second worker's summary", func() bool { return sessionNode(t, v, "s1") != nil })
	waitFor(t, "the worker to exit", func() bool { return !hookstate.JobWorkerStatus(v).Running })
	if n := sessionNode(t, v, "s1"); n.Summary != node.SummaryModel {
		t.Fatalf("node %+v", n)
	}
	if g.n("spawned") != 2 || g.n("worker") != 2 || g.n("run") != 2 {
		t.Errorf("%d workers started, %d held the lock, %d runs", g.n("spawned"), g.n("worker"), g.n("run"))
	}
	if k := testvault.Kinds(t, v); k[vault.KindDelegationFailed] != 0 {
		t.Errorf("kinds %v", k)
	}
	if k := jobKinds(t, v); len(k) != 0 {
		t.Errorf("left queued: %v", k)
	}
	soundVault(t, v)
}

// A worker whose model no worker finished asking maxModelAttempts times
// writes the deterministic summary and says why, instead of asking for
// ever.
func TestWorkerGivesUpOnTheModel(t *testing.T) {
	v, root, g, _ := workerVault(t)
	for _, p := range []Payload{{SessionID: "s1", CWD: root, Prompt: "p"}} {
		runEvent(t, v, PromptSubmit, p)
	}
	runEvent(t, v, SessionEnd, Payload{SessionID: "s1", CWD: root, LastAssistant: "r"})
	// Each "worker" counts its attempt, then dies before the model
	// answers: the test takes the lock, counts, and lets go.
	for i := 1; i <= maxModelAttempts+1; i++ {
		w, ok, err := hookstate.TryJobWorker(v)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		k := newWorker(v, WorkOptions{Background: true})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := k.run(ctx, w); done <- err }()
		if i <= maxModelAttempts {
			held := g.nextRun(t)
			cancel() // the worker is stopped mid-call: its attempt stays counted
			if err := <-done; err != errInterrupted {
				t.Fatalf("attempt %d: %v", i, err)
			}
			held <- "no"
			continue
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	n := sessionNode(t, v, "s1")
	if n == nil || n.Summary != node.SummaryDeterministic || !strings.Contains(n.SummaryFallback, "3 workers started asking it") {
		t.Fatalf("node %+v", n)
	}
	if g.n("run") != maxModelAttempts {
		t.Errorf("%d runs", g.n("run"))
	}
	soundVault(t, v)
}

// The race between the worker's last look at the queue and its unlock: a
// hook that queues a summary then, finds the lock held and starts no
// worker; the worker's look after its unlock finds the job and runs it
// before it exits.
func TestWorkerLastLookFindsTheJob(t *testing.T) {
	v, root, g, run := workerVault(t)
	w, ok, err := hookstate.TryJobWorker(v)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	k := newWorker(v, WorkOptions{})
	queued := false
	k.idle = func() {
		if queued {
			return
		}
		queued = true
		run(PromptSubmit, Payload{SessionID: "late", CWD: root, Prompt: "one more thing"})
		run(SessionEnd, Payload{SessionID: "late", CWD: root, LastAssistant: "done"})
	}
	done := make(chan WorkReport, 1)
	go func() {
		rep, err := k.run(context.Background(), w)
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	g.nextRun(t) <- "ok"
	rep := <-done
	if !queued || !slices.Contains(rep.Ran, "summarize default/late") {
		t.Fatalf("the job queued at the last moment was not run: %+v", rep)
	}
	if g.n("spawned") != 0 {
		t.Errorf("the hook started a worker while one held the lock")
	}
	if k := jobKinds(t, v); len(k) != 0 {
		t.Errorf("left queued: %v", k)
	}
}

// The worker's environment is the hook's without credentials and without
// what would point git or memvault elsewhere.
func TestWorkerEnv(t *testing.T) {
	got := workerEnv([]string{"PATH=/bin", "HOME=/h", "GITHUB_TOKEN=x", "OPENAI_API_KEY=y", "GIT_DIR=/elsewhere",
		"GIT_INDEX_FILE=i", "GIT_WORK_TREE=w", "MEMVAULT_DIR=/other", "MEMVAULT_AGENT=a", "GIT_CONFIG_GLOBAL=/dev/null"})
	want := []string{"PATH=/bin", "HOME=/h", "MEMVAULT_AGENT=a", "GIT_CONFIG_GLOBAL=/dev/null"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// holders names the processes that hold the pipe whose descriptor is fd
// in this one: pid, descriptor, command line.
func holders(fd int) []string {
	link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), fd))
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		fds, _ := os.ReadDir("/proc/" + p.Name() + "/fd")
		for _, f := range fds {
			if l, _ := os.Readlink("/proc/" + p.Name() + "/fd/" + f.Name()); l == link {
				cmd, _ := os.ReadFile("/proc/" + p.Name() + "/cmdline")
				out = append(out, p.Name()+" fd "+f.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
			}
		}
	}
	return out
}
