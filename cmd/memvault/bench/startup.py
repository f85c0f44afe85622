#!/usr/bin/env python3
"""Start-up and the hooks' own work, in CPU time (docs/PERFORMANCE.md, rows 25 and 26).

usage: startup.py ROUNDS BINARY [BINARY...]   (e.g. the build before a change, then this one)

For each binary, in turn and alternating the order every round: a do-nothing
Go binary (built here), `memvault version` with and without
GODEBUG=inittrace=1, and the four hooks of one Claude Code call
(session-start, prompt-submit, stop, session-end) on a vault of fifty
decisions, each its own process. CPU is the child's user + system time
(rusage), which load changes far less than wall time. Prints medians: CPU of
each, the ratios, each hook's own work (its CPU less version's), and the
package inits over THR ms (default 0.1).
"""
import collections, json, os, resource, shutil, statistics, subprocess, sys, tempfile, time

rounds, bins = int(sys.argv[1]), [os.path.abspath(b) for b in sys.argv[2:]]
tmp = tempfile.mkdtemp(prefix="mvstartup")
os.makedirs(tmp + "/noop")
open(tmp + "/noop/main.go", "w").write("package main\n\nfunc main() {}\n")
open(tmp + "/noop/go.mod", "w").write("module noop\n\ngo 1.22\n")
subprocess.run(["go", "build", "-o", tmp + "/noop-bin", "."], cwd=tmp + "/noop", check=True,
               env=dict(os.environ, GOWORK="off", CGO_ENABLED="0"))
cpu, init = collections.defaultdict(list), collections.defaultdict(lambda: collections.defaultdict(list))


def run(args, env=None, stdin=None, cwd=None):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(args, env=env, input=stdin, capture_output=True, text=True, cwd=cwd)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{args}: exit {p.returncode}: {p.stderr}")
    return (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000, p.stderr


def vault(i, b):
    proj = f"{tmp}/v{i}/proj"
    os.makedirs(proj)
    env = dict(os.environ, MEMVAULT_DIR=proj + "/.memory")
    run([b, "init"], env, cwd=proj)
    for n in range(50):
        run([b, "remember", "--kind", "decision", "--thread", "project:proj",
             f"decision {n}: use postgres shard {n} for the billing ledger service"], env, cwd=proj)
    return env, proj


vaults = {b: vault(i, b) for i, b in enumerate(bins)}
events = [("session-start", {"hook_event_name": "SessionStart", "source": "startup"}),
          ("prompt-submit", {"hook_event_name": "UserPromptSubmit", "prompt": "which database does the billing ledger use?"}),
          ("stop", {"hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "It uses postgres."}),
          ("session-end", {"hook_event_name": "SessionEnd", "reason": "other"})]
for r in range(rounds):
    for b in bins if r % 2 == 0 else bins[::-1]:
        env, proj = vaults[b]
        cpu[(b, "noop")].append(run([tmp + "/noop-bin"])[0])
        cpu[(b, "version")].append(run([b, "version"])[0])
        _, err = run([b, "version"], dict(os.environ, GODEBUG="inittrace=1"))
        for line in err.splitlines():
            f = line.split()
            if len(f) > 5 and f[0] == "init":
                init[b][f[1]].append(float(f[4]))
        for ev, p in events:
            p = dict(p, session_id=f"s{r}", cwd=proj, transcript_path="")
            cpu[(b, ev)].append(run([b, "hook", "claude-code", ev], env, json.dumps(p), proj)[0])
print(f"load average {open('/proc/loadavg').read().split()[:3]}, {rounds} rounds")
thr = float(os.environ.get("THR", "0.1"))
for b in bins:
    med = lambda k: statistics.median(cpu[(b, k)])
    noop, ver = med("noop"), med("version")
    total = sum(statistics.median(v) for v in init[b].values())
    own = sum(statistics.median(v) for k, v in init[b].items() if k.startswith("github.com/memvault/"))
    print(f"{b}\n  do-nothing {noop:.2f} ms; version {ver:.2f} ms ({ver / noop:.1f}x); "
          f"init {total:.2f} ms in {len(init[b])} packages, memvault's own {own:.2f} ms")
    hooks = 0.0
    for ev, _ in events:
        m = med(ev)
        hooks += m
        print(f"  {ev:14s} {m:6.2f} ms, own work {m - ver:5.2f} ms")
    print(f"  four hooks {hooks:.2f} ms = {hooks / ver:.2f}x version; own work {hooks - 4 * ver:.2f} ms")
    for m, k in sorted(((statistics.median(v), k) for k, v in init[b].items()), reverse=True):
        if m > thr:
            print(f"    init {m:.3f} ms  {k}")
time.sleep(2)  # the detached workers finish their jobs
shutil.rmtree(tmp, ignore_errors=True)
