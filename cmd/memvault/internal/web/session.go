package web

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/transcript"
)

// maxMessages bounds the messages a session page shows: a page a browser
// still renders quickly; `memvault transcript show` prints the rest.
const maxMessages = 2000

// sessionData is one session: its transcript as stored (prompts,
// replies, tool output, and the context the harness injected, marked as
// such), the control lines of its replies with the events they made, the
// events it recorded, what memvault injected into it (the session's
// marks), and its nodes.
type sessionData struct {
	Agent, Session string
	Messages       []sessionMessage
	More           bool // the transcript goes on past maxMessages
	Rows           []*vault.Row
	Injected       []string
	Nodes          []*node.Node
}

// sessionMessage is one stored message and the control lines recorded
// from it.
type sessionMessage struct {
	transcript.Stored
	Controls []control
}

// control is a control line of a reply as recorded: its line in the
// message and the event it made.
type control struct {
	Line int
	Row  *vault.Row
}

func (s *Server) session(r *http.Request) (*view, error) {
	agent, err := pathArg(r, "agent", "agent")
	if err != nil {
		return nil, err
	}
	session := r.PathValue("session")
	if transcript.CheckSession(session) != nil {
		return nil, fault.New(vault.ErrNotFound, "session %q: no such session", session)
	}
	v, _, err := s.open(true)
	if err != nil {
		return nil, err
	}
	d := &sessionData{Agent: agent, Session: session}
	// The session's rows: a byte search of the ledger for its key, as
	// `memvault ledger --session` does on a large vault, and the
	// corrections of what it finds.
	key, _ := json.Marshal(session)
	st, err := v.LoadStateWith([][]byte{append([]byte(`"session":`), key...)})
	if err != nil {
		return nil, err
	}
	controls := map[string][]control{}
	for _, row := range st.Rows {
		if row.Agent != agent || row.Session != session {
			continue
		}
		row.Status = st.Status(row)
		d.Rows = append(d.Rows, row)
		var data struct {
			Control *struct {
				Msg  string `json:"msg"`
				Line int    `json:"line"`
			} `json:"control"`
		}
		if row.Source == "control" && json.Unmarshal(row.Data, &data) == nil && data.Control != nil {
			controls[data.Control.Msg] = append(controls[data.Control.Msg], control{Line: data.Control.Line, Row: row})
		}
	}
	ref := transcript.Ref{Agent: agent, Session: session}
	err = transcript.Read(v.Files(), ref, 1, maxMessages+1, func(m transcript.Stored) error {
		if len(d.Messages) == maxMessages {
			d.More = true
			return nil
		}
		d.Messages = append(d.Messages, sessionMessage{Stored: m, Controls: controls[m.ID]})
		return nil
	})
	if err != nil {
		return nil, err
	}
	marks, err := hookstate.SessionMarks(v, ref)
	if err != nil {
		return nil, err
	}
	for id := range marks {
		d.Injected = append(d.Injected, id)
	}
	slices.Sort(d.Injected)
	ix, err := node.Lookup(v.Files(), []string{session}, nil)
	if err != nil {
		return nil, err
	}
	// Select leaves out the summaries a later one of the session supersedes.
	d.Nodes = ix.Select(node.Filter{Agent: agent, Session: session})
	if len(d.Messages) == 0 && len(d.Rows) == 0 && len(d.Nodes) == 0 {
		return nil, fault.New(vault.ErrNotFound, "session %s of agent %s: no transcript, event or node", session, agent)
	}
	return &view{Page: "session", Title: "Session " + session + " (" + agent + ")", Data: d}, nil
}
