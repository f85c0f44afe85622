package heads

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/memvault/memvault/vault"

	"github.com/gofrs/flock"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// HeadLease is the lease on one head file: who may rewrite it until when.
// A refresh takes it for the few milliseconds of a render; `memvault edit`
// holds it, renewed, while the editor is open. A refresh that finds a live
// lease held by someone else does not wait and does not overwrite: it
// records a head.deferred event, and the next refresh retries.
//
// The lease lives in .locks/heads/<head path>.lease (JSON). Reading and
// changing leases is serialised by a flock on .locks/heads.lock, held for
// microseconds, so two processes can never both think they took a lease.
type HeadLease struct {
	Head     string    `json:"head"`
	Agent    string    `json:"agent"`
	Session  string    `json:"session,omitempty"`
	Command  string    `json:"command,omitempty"`
	PID      int       `json:"pid"`
	Host     string    `json:"host"`
	Token    string    `json:"token"`
	Acquired time.Time `json:"acquired"`
	Expires  time.Time `json:"expires"`
}

// String names the holder for messages.
func (l *HeadLease) String() string {
	s := "agent " + l.Agent
	if l.Session != "" {
		s += ", session " + l.Session
	}
	if l.Command != "" {
		s += " (" + l.Command + ")"
	}
	return s + ", until " + l.Expires.UTC().Format(time.RFC3339)
}

// LeaseOwner is who asks for a lease.
type LeaseOwner struct {
	Agent   string
	Session string
	Command string
}

// Takeover records a lease that was broken because it was expired,
// unreadable, or held by a process that no longer exists.
type Takeover struct {
	Head     string          `json:"head"`
	Reason   string          `json:"reason"`
	Previous json.RawMessage `json:"previous,omitempty"` // the old lease as found (raw when unreadable)
}

const (
	headLeaseDir  = ".locks/heads"
	headLeaseLock = ".locks/heads.lock"
)

func leasePath(v *vault.Vault, head vault.RelPath) string {
	return filepath.Join(v.Root, filepath.FromSlash(headLeaseDir), filepath.FromSlash(head.String())+".lease")
}

// withLeaseTable runs fn holding the flock that serialises lease changes.
func withLeaseTable(v *vault.Vault, fn func() error) error {
	if err := v.Files().MkdirAll(filepath.Join(v.Root, filepath.FromSlash(headLeaseDir))); err != nil {
		return fault.IO("create "+headLeaseDir, err)
	}
	if err := v.Files().Check(filepath.Join(v.Root, filepath.FromSlash(headLeaseLock))); err != nil {
		return err
	}
	fl := flock.New(filepath.Join(v.Root, filepath.FromSlash(headLeaseLock)), flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(fileio.FilePerm))
	if err := fl.Lock(); err != nil {
		return fault.IO("lock "+headLeaseLock, err)
	}
	defer fl.Unlock()
	return fn()
}

// readLease returns the lease on head: nil when there is none; raw holds
// the file's bytes when they do not parse as a lease.
func readLease(v *vault.Vault, head vault.RelPath) (l *HeadLease, raw []byte, err error) {
	data, err := v.Files().ReadFile(leasePath(v, head))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fault.IO("read lease of "+head.String(), err)
	}
	l = new(HeadLease)
	if json.Unmarshal(data, l) != nil || l.Token == "" || l.Expires.IsZero() || l.Head != head.String() {
		return nil, data, nil
	}
	return l, data, nil
}

// processGone reports whether the lease names a process on this host that
// no longer runs, so its lease can be broken before it expires.
func processGone(l *HeadLease) bool {
	host, _ := os.Hostname()
	if l.Host != host || l.PID <= 0 {
		return false
	}
	err := syscall.Kill(l.PID, 0)
	return errors.Is(err, syscall.ESRCH)
}

// AcquireHeadLease takes the lease on head for ttl. When another owner
// holds a live lease it returns (nil, holder, nil, nil). An expired or
// unreadable lease, or one whose process is gone, is broken and reported
// as a Takeover for the caller to record.
func AcquireHeadLease(v *vault.Vault, head vault.RelPath, owner LeaseOwner, ttl time.Duration) (mine, holder *HeadLease, took *Takeover, err error) {
	err = withLeaseTable(v, func() error {
		cur, raw, err := readLease(v, head)
		if err != nil {
			return err
		}
		now := v.Now()
		switch {
		case cur == nil && raw != nil:
			took = &Takeover{Head: head.String(), Reason: "the lease file was unreadable", Previous: rawJSON(raw)}
		case cur == nil:
		case now.After(cur.Expires):
			took = &Takeover{Head: head.String(), Reason: "the lease expired at " + cur.Expires.UTC().Format(time.RFC3339), Previous: rawJSON(raw)}
		case processGone(cur):
			took = &Takeover{Head: head.String(), Reason: fmt.Sprintf("the holder, pid %d, is no longer running", cur.PID), Previous: rawJSON(raw)}
		default:
			holder = cur
			return nil
		}
		host, _ := os.Hostname()
		var tok [12]byte
		if _, err := rand.Read(tok[:]); err != nil {
			return err
		}
		l := &HeadLease{Head: head.String(), Agent: owner.Agent, Session: owner.Session, Command: owner.Command,
			PID: os.Getpid(), Host: host, Token: hex.EncodeToString(tok[:]),
			Acquired: now.UTC().Truncate(time.Millisecond), Expires: now.Add(ttl).UTC().Truncate(time.Millisecond)}
		if err := writeLease(v, l); err != nil {
			return err
		}
		mine = l
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if took != nil {
		v.LogHeads("lease of %s taken over by agent %s session %s: %s; previous: %s",
			took.Head, owner.Agent, owner.Session, took.Reason, strings.TrimSpace(string(took.Previous)))
	}
	return mine, holder, took, nil
}

// rawJSON keeps a lease file's bytes as JSON when they are JSON, else as a
// JSON string, so the takeover event can always carry them.
func rawJSON(raw []byte) json.RawMessage {
	if len(raw) > 4096 {
		raw = raw[:4096]
	}
	var probe any
	if json.Unmarshal(raw, &probe) == nil {
		if _, ok := probe.(map[string]any); ok {
			return json.RawMessage(strings.TrimSpace(string(raw)))
		}
	}
	b, _ := json.Marshal(strings.ToValidUTF8(string(raw), "?"))
	return b
}

func writeLease(v *vault.Vault, l *HeadLease) error {
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return v.Files().WriteAtomic(leasePath(v, vault.MustRel(l.Head)), append(data, '\n'))
}

// renewHeadLease extends a lease the caller holds. It fails with ErrConflict
// when the lease was taken over in the meantime.
func renewHeadLease(v *vault.Vault, l *HeadLease, ttl time.Duration) error {
	return withLeaseTable(v, func() error {
		cur, _, err := readLease(v, vault.MustRel(l.Head))
		if err != nil {
			return err
		}
		if cur == nil || cur.Token != l.Token {
			return fault.New(vault.ErrConflict, "lease of %s: taken over by someone else", l.Head)
		}
		l.Expires = v.Now().Add(ttl).UTC().Truncate(time.Millisecond)
		return writeLease(v, l)
	})
}

// ReleaseHeadLease gives a lease back. A lease that was taken over is left
// to its new holder.
func ReleaseHeadLease(v *vault.Vault, l *HeadLease) error {
	if l == nil {
		return nil
	}
	return withLeaseTable(v, func() error {
		cur, _, err := readLease(v, vault.MustRel(l.Head))
		if err != nil || cur == nil || cur.Token != l.Token {
			return err
		}
		if err := v.Files().Remove(leasePath(v, vault.MustRel(l.Head))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fault.IO("release lease of "+l.Head, err)
		}
		return nil
	})
}

// HeadLeases lists the live leases, for status.
func HeadLeases(v *vault.Vault) []HeadLease {
	var out []HeadLease
	now := v.Now()
	_ = v.Files().Walk(headLeaseDir, func(p string, d fs.DirEntry) error {
		if d.IsDir() || !strings.HasSuffix(p, ".lease") {
			return nil
		}
		data, err := v.Files().ReadFile(p)
		if err != nil {
			return nil
		}
		var l HeadLease
		if json.Unmarshal(data, &l) == nil && l.Token != "" && now.Before(l.Expires) {
			out = append(out, l)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Head < out[j].Head })
	return out
}
