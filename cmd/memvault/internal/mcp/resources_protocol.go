package mcp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/vault/continuity"
)

// The protocol's lists as resources: memvault://learnings and
// memvault://decisions are what `memvault continuity learnings` and
// `memvault continuity decisions` print in the server's working folder
// (the learnings active or corrected, the decisions active, whose scope is
// in play there, smallest scope first), one line each, less the rows of
// agents the session's agent may not see (continuity.SeesAgent).

func protocolLists() []*sdk.Resource {
	return []*sdk.Resource{
		{URI: learningsURI, Name: "learnings", Title: "Learnings in scope",
			Description: "The learnings (error, cause, prevention) whose scope is in play in the working folder, smallest scope first, with their status, ttl and flags.",
			MIMEType:    markdown},
		{URI: decisionsURI, Name: "decisions", Title: "Decisions in scope",
			Description: "The decisions in force whose scope is in play in the working folder, smallest scope first, with their rationale.",
			MIMEType:    markdown},
	}
}

func (s *Server) readProtocolList(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	c, err := s.open(ctx, req.Session, false)
	if err != nil {
		return nil, resourceError(err)
	}
	text, err := protocolListText(c, uri)
	if err != nil {
		return nil, resourceError(err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: markdown, Text: text}}}, nil
}

// protocolListText is the text of memvault://learnings or
// memvault://decisions as the call's agent is shown it.
func protocolListText(c *call, uri string) (string, error) {
	st, err := continuity.LoadContinuity(c.v)
	if err != nil {
		return "", err
	}
	f := continuity.FilterForDir(continuity.ProjectDir(c.v, c.dir))
	var b strings.Builder
	n := 0
	// The lines and the order of the command's listing: status, then the
	// row as the command prints it.
	if uri == learningsURI {
		b.WriteString("# Learnings in scope (smallest scope first)\n\n")
		for _, l := range st.ActiveLearnings(f, false) {
			if continuity.SeesAgent(c.v, c.agent, l.Agent) {
				fmt.Fprintf(&b, "- %s %s\n", l.Status, l.Line())
				n++
			}
		}
	} else {
		b.WriteString("# Decisions in scope (smallest scope first)\n\n")
		for _, d := range st.ActiveDecisions(f, false) {
			if continuity.SeesAgent(c.v, c.agent, d.Agent) {
				fmt.Fprintf(&b, "- %s %s\n", d.Status, d.Line())
				n++
			}
		}
	}
	if n == 0 {
		b.WriteString("- none\n")
	}
	return b.String(), nil
}
