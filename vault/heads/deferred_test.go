package heads

import (
	"os"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/vaulttest"
)

// A deferred refresh (TxOptions.Defer, the hooks' and the after-write
// refresh) leaves MEMORY.md as memvault's bytes waiting: a later refresh
// takes it for neither a hand edit nor a killed write, and the next commit
// carries it under its own subject. A person's save after the deferred
// write is not carried as memvault's: the next refresh commits it as
// theirs (head.edited), and nothing they wrote is lost.
func TestDeferredRefreshWaits(t *testing.T) {
	for _, edited := range []bool{false, true} {
		name := "untouched"
		if edited {
			name = "saved by a person meanwhile"
		}
		t.Run(name, func(t *testing.T) {
			v := testvault.New(t)
			testvault.Remember(t, v, "the queue is Postgres")
			rep, err := Refresh(v, RefreshOptions{TxOptions: vault.TxOptions{Defer: true}, Trigger: "session-end", Memory: true})
			if err != nil || rep.Commit != "" {
				t.Fatalf("deferred refresh: %v, commit %q", err, rep.Commit)
			}
			if !v.HeadWaits(vault.MemoryHead) {
				t.Fatal("MEMORY.md, written by a deferred refresh, does not wait for the next commit")
			}
			if edited {
				vaulttest.EditFile(t, v.Abs(vault.MustRel(vault.MemoryHead)),
					[]byte(testvault.ReadHead(t, v, vault.MemoryHead)+"\n## Mine\n\n- Dana owns the Stripe account\n"))
			}
			// A refresh meanwhile, committing: no hand edit of memvault's
			// bytes, no "killed" commit.
			if _, err := Refresh(v, RefreshOptions{Trigger: "render", Memory: true}); err != nil {
				t.Fatal(err)
			}
			// The next write commits what waits, carried under its subject.
			testvault.Remember(t, v, "retry webhooks 5 times")
			if s := testvault.LastSubject(t, v); s != "fact: retry webhooks 5 times" {
				t.Fatalf("the carrying commit is %q", s)
			}
			kinds := testvault.Kinds(t, v)
			if want := map[bool]int{false: 0, true: 1}[edited]; kinds[vault.KindHeadEdited] != want {
				t.Fatalf("%d head.edited, want %d", kinds[vault.KindHeadEdited], want)
			}
			log := (vaulttest.Git{Dir: v.Root}).Run(t, "log", "--format=%s")
			if strings.Contains(log, "killed before") {
				t.Fatalf("a deferred write was committed as a killed one:\n%s", log)
			}
			if st := (vaulttest.Git{Dir: v.Root}).Run(t, "status", "--porcelain"); strings.TrimSpace(st) != "" {
				t.Fatalf("left uncommitted:\n%s", st)
			}
			if edited && !strings.Contains(testvault.ReadHead(t, v, vault.MemoryHead), "Dana owns the Stripe account") {
				t.Fatal("the person's save is lost")
			}
			if entries, _ := os.ReadDir(v.Abs(vault.MustRel(".locks", "head-writes"))); len(entries) != 0 {
				t.Fatalf("journal records left: %v", entries)
			}
			testvault.MustVerify(t, v)
		})
	}
}
