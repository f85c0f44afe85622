package vault

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// The write-time check. A full verification reads the whole history, which a
// writer cannot afford on every transaction. Instead the last verified state
// of each segment (size, mtime, inode and the tip hash at its end) is kept in
// .state/ledger-verified.bin; a writer re-checks only the segments whose
// stat no longer matches, which after a writer's own append is none. A hand
// edit changes the mtime (and, for editors that replace files, the inode), so
// it is caught by the next writer. The cache is derived: deleting it costs one
// full chain check. It is not a Derived view: what it keeps is per segment
// and checked line by line with hashes, not folded from appended events,
// but it is written in the same codec and framing (derived.go).

type SegStamp struct {
	Path  string `json:"path"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime_ns"`
	Ino   uint64 `json:"ino"`
	Tip   string `json:"tip"` // the hash of the segment's last event (or the last before it)
}

// verifiedStamp is what the writers' check keeps per segment: its stamp,
// the inode's change time, the blob HEAD committed for it when it was last
// held against HEAD, and the ledger's open tips at the end of it.
type verifiedStamp struct {
	SegStamp
	// Ctime is the inode's change time, which the kernel sets on every
	// change of content or stat, and no call of a person's sets back (touch
	// -d sets the mtime, not the ctime); 0 when not known yet.
	Ctime int64
	Head  string // the blob HEAD had for the segment when checked; "" when unknown or not committed
	Tips  []string
}

// sameFile reports whether two stamps describe the same file as it was:
// path, size, mtime, inode and ctime.
func (s verifiedStamp) sameFile(o verifiedStamp) bool {
	return s.Path == o.Path && s.Size == o.Size && s.Mtime == o.Mtime && s.Ino == o.Ino && s.Ctime == o.Ctime && s.Ctime != 0
}

// verifiedFile is .state/<verifiedFile>.bin; bump verifiedVersion when
// its encoding changes.
const (
	verifiedFile    = "ledger-verified"
	verifiedVersion = 5 // 2: the open tips after each segment; 3: a failed check's problems; 4: ctime and HEAD's blob; 5: the trusted commit
)

// verifiedStampOf is the stamp of segment s as it is now, its ctime
// included.
func (v *Vault) verifiedStampOf(s Segment) (verifiedStamp, error) {
	info, err := v.Files().Stat(filepath.Join(v.Root, filepath.FromSlash(s.String())))
	if err != nil {
		return verifiedStamp{}, fault.IO("stat "+s.String(), err)
	}
	return statStamp(s.String(), info), nil
}

func statStamp(path string, info fs.FileInfo) verifiedStamp {
	st := verifiedStamp{SegStamp: SegStamp{Path: path, Size: info.Size(), Mtime: info.ModTime().UnixNano()}}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		st.Ino = sys.Ino
		st.Ctime = fileio.Ctime(sys)
	}
	return st
}

func stampOf(root string, s Segment) (SegStamp, error) {
	info, err := fileio.At(root).Stat(filepath.Join(root, filepath.FromSlash(s.String())))
	if err != nil {
		return SegStamp{}, fault.IO("stat "+s.String(), err)
	}
	st := SegStamp{Path: s.String(), Size: info.Size(), Mtime: info.ModTime().UnixNano()}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		st.Ino = sys.Ino
	}
	return st, nil
}

// verifiedCache is the writers' check as saved: the stamps, and when the
// check failed, its problems and the hash of HEAD's ledger tree they were
// found against. A vault in need of repair keeps refusing structured
// writes, but each transaction costs one stat per segment, not a re-read of
// the ledger from the bad line on, for as long as neither the segments nor
// the committed ledger change.
type verifiedCache struct {
	stamps   []verifiedStamp
	problems []Problem
	tree     string // HEAD's ledger tree when problems were found
	// commit is the last commit whose ledger the history check trusted,
	// and tips the open tips there (committed.go, holdHistory).
	commit string
	tips   []string
}

// stampKeyFile holds the key the verified stamps are signed with: 32
// random bytes of this clone's own, made by the first save. .state/ is
// not committed, so no clone, pull or push carries it. A stamp file whose
// signature does not check (edited, forged, replayed with another key, or
// signed with a key since lost) vouches for nothing: every segment is
// checked again.
const stampKeyFile = ".state/stamps.key"

// stampKey returns this clone's stamp key; with create, one is made when
// there is none. nil when there is none to be had: nothing is trusted and
// nothing is saved.
func (v *Vault) stampKey(create bool) []byte {
	path := filepath.Join(v.Root, filepath.FromSlash(stampKeyFile))
	if key, err := v.Files().ReadFile(path); err == nil && len(key) == 32 {
		return key
	}
	if !create {
		return nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil
	}
	if v.Files().WriteCache(path, key) != nil {
		return nil
	}
	// Two writers that made a key at once: the one on disk is the key.
	if got, err := v.Files().ReadFile(path); err == nil && len(got) == 32 {
		return got
	}
	return nil
}

// encodeVerified writes the cache's content, what its signature covers.
func encodeVerified(e *codec.Encoder, c verifiedCache) {
	e.Int(len(c.stamps))
	for _, s := range c.stamps {
		encodeStamp(e, s.SegStamp)
		e.Int64(s.Ctime)
		e.Str(s.Head)
		e.Int(len(s.Tips))
		for _, t := range s.Tips {
			e.Str(t)
		}
	}
	e.Int(len(c.problems))
	for _, p := range c.problems {
		e.Str(p.File)
		e.Int(p.Line)
		e.Str(p.ID)
		e.Str(p.Msg)
		e.Str(p.Commit)
	}
	e.Str(c.tree)
	e.Str(c.commit)
	e.Strs(c.tips)
}

// signVerified is the cache's signature under key.
func signVerified(key []byte, c verifiedCache) string {
	e := &codec.Encoder{B: make([]byte, 0, 4096)}
	encodeVerified(e, c)
	m := hmac.New(sha256.New, key)
	m.Write(e.B)
	return string(m.Sum(nil))
}

func (v *Vault) loadStamps() verifiedCache {
	key := v.stampKey(false)
	if key == nil {
		return verifiedCache{}
	}
	d, ok := codec.ReadFile(v.Root, verifiedFile, verifiedVersion)
	if !ok {
		return verifiedCache{}
	}
	n := d.Count()
	if d.Failed() {
		return verifiedCache{}
	}
	var c verifiedCache
	c.stamps = make([]verifiedStamp, n)
	for i := range c.stamps {
		c.stamps[i].SegStamp = decodeStamp(d)
		c.stamps[i].Ctime = d.Int64()
		c.stamps[i].Head = d.Str()
		c.stamps[i].Tips = make([]string, d.Count())
		for j := range c.stamps[i].Tips {
			c.stamps[i].Tips[j] = d.Str()
		}
	}
	c.problems = make([]Problem, d.Count())
	for i := range c.problems {
		c.problems[i] = Problem{File: d.Str(), Line: d.Uvarint(), ID: d.Str(), Msg: d.Str(), Commit: d.Str()}
	}
	c.tree, c.commit, c.tips = d.Str(), d.Str(), d.Strs()
	sig := d.Str()
	if !d.Done() || !hmac.Equal([]byte(sig), []byte(signVerified(key, c))) {
		return verifiedCache{}
	}
	return c
}

// saveStamps writes the cache without fsync: lost, stale or torn, it only
// costs a re-check of the segments it no longer vouches for. A stamp
// without its ctime (a writer's own append stamps size, mtime and inode)
// is given the file's, when the file still has that size, mtime and inode;
// otherwise it is saved without, and the segment is checked again.
func (v *Vault) saveStamps(c verifiedCache) {
	for i, s := range c.stamps {
		if s.Ctime != 0 {
			continue
		}
		if seg, ok := SegmentFromPath(s.Path); ok {
			if cur, err := v.verifiedStampOf(seg); err == nil && cur.Size == s.Size && cur.Mtime == s.Mtime && cur.Ino == s.Ino {
				c.stamps[i].Ctime = cur.Ctime
			}
		}
	}
	if c.commit == "" {
		c.commit, c.tips = v.trustedAfter(c)
	}
	key := v.stampKey(true)
	if key == nil {
		return
	}
	codec.WriteFile(v.Root, verifiedFile, verifiedVersion, func(e *codec.Encoder) {
		encodeVerified(e, c)
		e.Str(signVerified(key, c))
	})
}

// saveCheckedStamps is saveStamps for a verification, which saves only in
// a clone memvault has written to: a fresh clone with no stamps yet keeps
// none until its first write, which also registers git's merge driver
// there (registerDriverOnce, tx.go).
func (v *Vault) saveCheckedStamps(c verifiedCache) {
	if _, err := v.Files().Stat(codec.FilePath(v.Root, verifiedFile)); err == nil {
		v.saveStamps(c)
	}
}

// TrustRepair takes HEAD, the commit of a repair, as the one later
// commits are held to: a repair re-chains lines, which the history check
// would otherwise name as a rewrite. memvault repair refuses a history
// whose only problems are lines some commit or the work tree forged
// (Problem.Commit), so what it trusts is damage it mended.
func (v *Vault) TrustRepair() error {
	head, _ := v.Repo.HeadAndParent()
	v.saveStamps(verifiedCache{commit: head})
	segs, _, err := ListSegments(v.Root)
	if err != nil {
		return err
	}
	stamps, problems, _, err := v.checkChain(segs)
	if err == nil && len(problems) == 0 && len(stamps) > 0 {
		v.saveStamps(verifiedCache{stamps: stamps, commit: head, tips: stamps[len(stamps)-1].Tips})
	}
	return err
}

// ledgerTree is the hash of the ledger folder HEAD commits ("" when none):
// what the committed-history part of a saved failed check depends on.
func (v *Vault) ledgerTree() string {
	tree, err := v.Repo.TreeAt("")
	if err != nil || tree == nil {
		return ""
	}
	e, err := tree.FindEntry("ledger")
	if err != nil {
		return ""
	}
	return e.Hash.String()
}

// checkChain verifies the segments that changed since the last check and
// returns their stamps. A torn last line in the last segment is tolerated:
// the writer repairs it. Segments that changed are also held against what
// HEAD commits (heldAgainst): a writer never commits a ledger that
// lost or changed a committed line.
func (v *Vault) checkChain(segs []Segment) (stamps []verifiedStamp, problems []Problem, reread bool, err error) {
	cache := v.loadStamps()
	old := cache.stamps
	// A merge in progress is asked every time (one stat): it is over as
	// soon as git's commit is made, so it is never saved.
	merging := v.mergeInProgress()
	withMerge := func(ps []Problem) []Problem {
		if merging == nil {
			return ps
		}
		return append(slices.DeleteFunc(ps, func(p Problem) bool { return p.File == merging.File }), *merging)
	}
	if len(cache.problems) > 0 {
		// A saved failure holds while the segments and HEAD's ledger are
		// as they were; otherwise everything is checked again.
		if st, same := v.sameStamps(segs, old); same && cache.tree == v.ledgerTree() {
			return st, withMerge(cache.problems), false, nil
		}
		old = nil
	}
	stamps = make([]verifiedStamp, 0, len(segs))
	cc := newChainChecker()
	trusted := true
	var changed []Segment
	for i, s := range segs {
		st, err := v.verifiedStampOf(s)
		if err != nil {
			return nil, nil, false, err
		}
		if trusted && i < len(old) && old[i].sameFile(st) {
			st.Tip, st.Tips, st.Head = old[i].Tip, old[i].Tips, old[i].Head
			stamps = append(stamps, st)
			continue
		}
		if trusted {
			trusted = false
			if i > 0 {
				cc.resume(stamps[i-1].Tips, v.hashesBefore(segs[:i]))
			}
		}
		reread = true
		changed = append(changed, s)
		lines, torn, err := readSegment(v.Root, s)
		if err != nil {
			return nil, nil, false, err
		}
		for _, ll := range lines {
			cc.line(ll)
		}
		if len(torn) > 0 && i < len(segs)-1 {
			cc.problems = append(cc.problems, Problem{File: s.String(), Line: len(lines) + 1,
				Msg: "unterminated line in a closed segment"})
		}
		st.Tip, st.Tips = cc.last, slices.Clone(cc.tips)
		stamps = append(stamps, st)
	}
	problems = cc.problems
	if head, err := v.Repo.Head(); err == nil && !head.IsZero() && (head.String() != cache.commit || len(changed) > 0) {
		hp, err := v.holdHistory(cache, changed)
		if err != nil {
			return nil, nil, false, err
		}
		problems, reread = append(problems, hp...), true
	} else {
		v.trust(cache.commit, cache.tips, 0)
	}
	if reread || len(old) != len(segs) {
		cp, err := v.heldAgainst("", segs, changed, len(old) != len(segs), false, diskSegment(v.Root), nil)
		if err != nil {
			return nil, nil, false, err
		}
		problems = append(problems, cp...)
	}
	return stamps, withMerge(problems), reread || len(old) != len(segs), nil
}

// sameStamps reports whether every segment is as old recorded it, and
// returns the stamps.
func (v *Vault) sameStamps(segs []Segment, old []verifiedStamp) ([]verifiedStamp, bool) {
	if len(old) != len(segs) {
		return nil, false
	}
	for i, s := range segs {
		st, err := v.verifiedStampOf(s)
		if err != nil || !old[i].sameFile(st) {
			return nil, false
		}
	}
	return old, true
}

// hashesBefore returns a lookup of the event hashes in segs, which read
// each segment only when a hash is not found in the ones read so far,
// newest first: a prev that names an event before the first changed
// segment (a merged clone's line of history) is found in the segments
// just before it.
func (v *Vault) hashesBefore(segs []Segment) func(string) bool {
	known := make(map[string]struct{})
	next := len(segs) - 1
	return func(h string) bool {
		for {
			if _, ok := known[h]; ok {
				return true
			}
			if next < 0 {
				return false
			}
			lines, _, err := readSegment(v.Root, segs[next])
			next--
			if err != nil {
				continue
			}
			for _, ll := range lines {
				if ll.Event != nil {
					known[ll.Event.Hash] = struct{}{}
				}
			}
		}
	}
}

// VerifyIncremental checks what changed since the last clean check, by
// the writers' own check (checkChain) and on the same stamps: the chain
// of every segment whose stamp (size, mtime, inode, ctime) no longer
// matches, from the first such segment on, and each of them held against
// HEAD; every segment whose blob in HEAD is not the one it was last held
// against (a commit, a reset, a pull), held against HEAD again; committed
// segments gone from disk, stray files, a torn last line, a git merge in
// progress, and every symbolic link. Segments whose stamps match are
// trusted, and references (links, corrections, nodes) are not checked:
// Verify checks everything. A clean result is saved, as Verify's is.
func (v *Vault) VerifyIncremental() (*VerifyReport, error) {
	return v.withLinks(v.verifyIncremental)
}

func (v *Vault) verifyIncremental() (*VerifyReport, error) {
	segs, strays, err := ListSegments(v.Root)
	if err != nil {
		return nil, err
	}
	rep := &VerifyReport{Segments: len(segs), Incremental: true}
	for _, s := range strays {
		rep.Problems = append(rep.Problems, Problem{File: s, Msg: "not a ledger segment name (want <dd>[-<n>].jsonl)"})
	}
	old := v.loadStamps().stamps
	v.Progress.Step("verify: checking what changed", "", 0, 0)
	stamps, problems, reread, err := v.checkChain(segs)
	if err != nil {
		return nil, err
	}
	// How many segments were read again: from the first whose stamp did
	// not match.
	rep.Rechecked = len(segs)
	for i := range segs {
		if i >= len(old) || !old[i].sameFile(stamps[i]) {
			break
		}
		rep.Rechecked--
	}
	if !reread {
		rep.Rechecked = 0
	}
	add := func(ps []Problem) {
		for _, p := range ps {
			if !slices.Contains(problems, p) {
				problems = append(problems, p)
			}
		}
	}
	if v.mergeInProgress() == nil {
		heads, err := v.ledgerBlobs("")
		if err != nil {
			return nil, err
		}
		onDisk := make(map[string]bool, len(segs))
		var again []Segment
		for i, s := range segs {
			onDisk[s.String()] = true
			if i >= len(segs)-rep.Rechecked {
				continue // read again above, and held against HEAD there
			}
			if h, ok := heads[s.String()]; ok && h != stamps[i].Head {
				again = append(again, s)
			}
		}
		for p := range heads {
			if !onDisk[p] {
				add([]Problem{missingSegment(p)})
			}
		}
		v.Progress.Step("verify: holding changed segments against HEAD", "segments", int64(len(again)), int64(len(segs)))
		held, err := v.heldAgainst("", segs, again, false, false, diskSegment(v.Root), nil)
		if err != nil {
			return nil, err
		}
		add(held)
		if len(problems) == 0 {
			for i := range stamps {
				stamps[i].Head = heads[stamps[i].Path]
			}
		}
	}
	if n := len(segs); n > 0 {
		_, tail, err := v.Files().ReadEnd(filepath.Join(v.Root, filepath.FromSlash(segs[n-1].String())))
		if err != nil {
			return nil, err
		}
		if k := len(tail); k > 0 && tail[k-1] != '\n' {
			rep.Torn = append(rep.Torn, Problem{File: segs[n-1].String(),
				Msg: "torn last line (a crash mid-append); the next write removes it"})
		}
	}
	if len(problems) == 0 {
		v.saveCheckedStamps(verifiedCache{stamps: stamps})
	} else if reread {
		// As a writer saves a failed check (tx.go), so that the next
		// transactions refuse from it without reading the ledger again.
		c := verifiedCache{stamps: stamps, problems: slices.DeleteFunc(slices.Clone(problems),
			func(p Problem) bool { return p.File == mergeHeadFile })}
		if len(c.problems) > 0 {
			c.tree = v.ledgerTree()
			v.saveCheckedStamps(c)
		}
	}
	rep.Problems = append(rep.Problems, problems...)
	sortProblems(rep.Problems)
	if n := len(stamps); n > 0 {
		rep.Tip = stamps[n-1].Tip
		if len(stamps[n-1].Tips) > 1 {
			rep.Tips = stamps[n-1].Tips
		}
	}
	rep.OK = len(rep.Problems) == 0
	return rep, nil
}

// Health is what a writer would find wrong with the vault before writing:
// the cheap chain check every transaction runs (checkchain.go) and
// the configuration. A vault in bad health still captures transcripts;
// structured writes are refused until it is repaired. Status, doctor and
// the session-start context report it, so the need for a repair is never
// silent.
type Health struct {
	Chain  []Problem // what the writers' chain check found, first first
	Config error     // why memvault.toml could not be read (OpenForCapture)
}

// OK reports whether writes would be accepted.
func (h Health) OK() bool { return len(h.Chain) == 0 && h.Config == nil }

// Summary is one line naming the first problem and what to do about it;
// "" when the vault is healthy.
func (h Health) Summary() string {
	switch {
	case h.Config != nil:
		return fmt.Sprintf("memvault.toml does not parse (%v): only transcripts are being captured; fix the file by hand", h.Config)
	case len(h.Chain) > 0 && h.Chain[len(h.Chain)-1].File == mergeHeadFile && len(h.Chain) == 1:
		return "a git merge is in progress in the vault: only transcripts are being captured until it is concluded (git commit, after memvault repair if the ledger conflicts) or undone (git merge --abort)"
	case len(h.Chain) > 0:
		more := ""
		if len(h.Chain) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(h.Chain)-1)
		}
		if h.Chain[0].Commit != "" {
			return fmt.Sprintf("the ledger's history was forged: %s%s; only transcripts are being captured until it is undone", h.Chain[0], more)
		}
		return fmt.Sprintf("the ledger needs repair: %s%s; only transcripts are being captured until `memvault repair` is run", h.Chain[0], more)
	}
	return ""
}

// Health runs the writers' check without taking the lock or saving
// anything: on a vault whose segments are unchanged since the last write it
// costs one stat per segment.
func (v *Vault) Health() (Health, error) {
	h := Health{Config: v.configErr}
	segs, _, err := ListSegments(v.Root)
	if err != nil {
		return h, err
	}
	_, problems, _, err := v.checkChain(segs)
	if err != nil {
		return h, err
	}
	h.Chain = problems
	return h, nil
}
