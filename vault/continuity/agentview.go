package continuity

import (
	"bytes"
	"errors"
	"io/fs"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/heads"
)

// Agent scope (docs/HOOKS.md, "Identity"). Every row carries its agent.
// The vault's own agent (memvault.toml's `agent`, `default` unless set:
// people at the command line, and every harness not given MEMVAULT_AGENT)
// owns the vault: its rows are shared with every agent, and it sees every
// row. Another agent sees its own rows and the shared ones, never those of
// a third agent. The files on disk (MEMORY.md, the thread heads,
// CONTINUITY.md) are the owner's view; a session of another agent is shown
// the same heads rendered from its rows only, when the vault holds rows
// that agent may not see.

// SeesAgent reports whether a reader acting as agent may see a row written
// by owner.
func SeesAgent(v *vault.Vault, agent, owner string) bool {
	return agent == "" || agent == v.Config.Agent || owner == agent || owner == v.Config.Agent || owner == ""
}

// VisibleAgents is the agent filter of a search on behalf of agent: nil for
// the vault's own agent (every row), else the agent and the vault's own.
func VisibleAgents(v *vault.Vault, agent string) []string {
	if agent == "" || agent == v.Config.Agent {
		return nil
	}
	return []string{agent, v.Config.Agent}
}

// AgentHeads returns what a session of agent is shown of the named heads
// (MEMORY.md, threads/<kind>/<slug>.md, CONTINUITY.md): the heads as a
// refresh would leave them (CurrentHeads; CONTINUITY.md as it is on disk)
// when the agent may see every row of the ledger, else each rendered from
// the rows the agent may see. Hand edits of the files are the owner's and
// are not part of another agent's render. A head with nothing to show is
// nil.
func AgentHeads(v *vault.Vault, agent string, names ...string) ([][]byte, error) {
	var st *vault.State
	if agent != "" && agent != v.Config.Agent {
		full, _, err := heads.FoldedState(v)
		if err != nil {
			return nil, err
		}
		st = &vault.State{}
		hidden := false
		for _, r := range full.Rows {
			if SeesAgent(v, agent, r.Agent) {
				st.Rows = append(st.Rows, r)
			} else if heads.ContentKinds[r.EffectiveKind()] || r.Kind == "node.created" {
				hidden = true
			}
		}
		if !hidden {
			st = nil // nothing to hide: the files are the agent's view too
		}
	}
	out := make([][]byte, len(names))
	if st == nil {
		var files []string
		var at []int
		for i, h := range names {
			if h == vault.ContinuityHead {
				data, err := v.Files().ReadFile(v.Abs(vault.MustRel(h)))
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return nil, fault.IO("read "+h, err)
				}
				out[i] = data
				continue
			}
			files, at = append(files, h), append(at, i)
		}
		cur, err := heads.CurrentHeads(v, files...)
		if err != nil {
			return nil, err
		}
		for k, i := range at {
			out[i] = cur[k]
		}
		return withoutAudited(v, names, out), nil
	}
	cfg, err := heads.LoadHeadsConfig(v)
	if err != nil {
		return nil, err
	}
	vw := heads.BuildView(st, cfg)
	for i, h := range names {
		if h == vault.ContinuityHead {
			ccfg, err := loadContinuityConfig(v)
			if err != nil {
				return nil, err
			}
			out[i] = renderContinuity(foldContinuity(st.Rows, nil), ccfg.Words).Bytes
			continue
		}
		t, ok := heads.TargetOf(h)
		if !ok {
			return nil, &vault.Error{Class: vault.ErrInvalid, Msg: "head " + h + ": want MEMORY.md, CONTINUITY.md or threads/<kind>/<slug>.md"}
		}
		if t.Thread != "" && !vw.HasThread(t.Thread) {
			continue
		}
		doc, err := heads.RenderHead(vw, t)
		if err != nil {
			return nil, err
		}
		out[i] = doc.Bytes
	}
	return withoutAudited(v, names, out), nil
}

// withoutAudited takes out of the heads (all but CONTINUITY.md, whose
// live sections hold no learning or decision) the lines of the rows the
// audit as of today takes away: a learning past its ttl, one invalidated
// by a newer one or reworded by an older one, a decision a newer one
// contradicts. Until the audit is written (at the session end, or by
// `memvault continuity audit`), the files still list them; a session is
// never shown them. A head's line of a row ends with its event id in
// backquotes. Should the protocol's state not load, the heads are shown
// as they are.
func withoutAudited(v *vault.Vault, names []string, texts [][]byte) [][]byte {
	var o *auditOutcome
	if err := withSessionState(v, func(_ ContinuityConfig, st *contState) error {
		o = st.sum.Audit
		return nil
	}); err != nil || o == nil || len(o.Gone) == 0 {
		return texts
	}
	sum := struct{ Audit *auditOutcome }{o}
	for i, h := range names {
		if h == vault.ContinuityHead || texts[i] == nil {
			continue
		}
		var b bytes.Buffer
		for _, line := range bytes.SplitAfter(texts[i], []byte("\n")) {
			if bytes.HasPrefix(line, []byte("- ")) {
				if m := quotedIDRE().FindAllSubmatch(line, -1); len(m) > 0 && sum.Audit.Takes(string(m[len(m)-1][1])) {
					continue
				}
			}
			b.Write(line)
		}
		texts[i] = b.Bytes()
	}
	return texts
}
