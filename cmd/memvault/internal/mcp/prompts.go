package mcp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
)

// catchUpEvents is how many of a thread's latest events the catch-up
// prompt lists below the session-start context.
const catchUpEvents = 20

func (s *Server) addPrompts() {
	s.sdk.AddPrompt(&sdk.Prompt{Name: "catch_up", Title: "Catch me up on this thread",
		Description: "Where the work on a thread stands: what session start shows of it, and its latest events, " +
			"with the request to summarise them.",
		Arguments: []*sdk.PromptArgument{{Name: "thread", Title: "Thread",
			Description: "the thread (kind:slug); default: the current thread"}}}, s.catchUp)
}

func (s *Server) catchUp(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	c, err := s.open(ctx, req.Session, true)
	if err != nil {
		return nil, resourceError(err)
	}
	thread, err := s.thread(c, req.Params.Arguments["thread"], false)
	if err != nil {
		return nil, resourceError(err)
	}
	text, err := catchUpText(c, thread)
	if err != nil {
		return nil, resourceError(err)
	}
	about := "thread " + thread
	if thread == "" {
		about = "the global memory (no current thread)"
	}
	return &sdk.GetPromptResult{Description: "Catch up on " + about,
		Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: text}}}}, nil
}

// catchUpText is the prompt's one message: the request, what a session
// starting in the thread is shown, and the thread's latest events.
func catchUpText(c *call, thread string) (string, error) {
	var b strings.Builder
	if thread != "" {
		fmt.Fprintf(&b, "Catch me up on thread %s", thread)
	} else {
		b.WriteString("Catch me up on this project's memory")
	}
	b.WriteString(": where the work stands, what was decided and why, the open commitments and blockers, and " +
		"the next action. Cite the ids (e_…, n_…) you rely on; the recall and expand tools find more.\n\n")
	b.WriteString(hooks.StartContext(c.v, c.agent, thread, c.dir, hooks.DefaultContextLimit))
	st, err := c.v.LoadState()
	if err != nil {
		return "", err
	}
	rows, matched, err := ops.Ledger(st, ops.LedgerQuery{Filter: vault.Filter{Thread: thread}, Limit: catchUpEvents,
		Agents: continuity.VisibleAgents(c.v, c.agent)})
	if err != nil {
		return "", err
	}
	if thread != "" && len(rows) > 0 {
		fmt.Fprintf(&b, "\n\n# Latest events of %s (%d of %d)\n", thread, len(rows), matched)
		for _, r := range rows {
			fmt.Fprintf(&b, "- %s %s %s [%s]: %s\n", r.TS, r.Kind, r.ID, r.Status, oneLine(r.Text))
		}
	}
	return b.String(), nil
}

// oneLine folds text onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
