package mcp

import (
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/vault"
)

// The error model (docs/MCP.md, "Errors"): a tool that fails answers with a
// result marked isError whose text is the command line's message and what
// to do next, and whose _meta says the class, the command line's exit code
// for it, and whether the same call may succeed if made again. It carries
// no structuredContent, which clients check against the tool's output
// schema. Resources and prompts fail with JSON-RPC errors, as the protocol
// has them do.

// ErrorMetaKey names the error's details in a failed result's _meta.
const ErrorMetaKey = "memvault/error"

// ToolError is the _meta of a failed tool call.
type ToolError struct {
	Class     string `json:"class"`     // invalid, not_found, conflict, busy, corrupt, io, remote, forbidden, internal
	Code      int    `json:"code"`      // the command line's exit code for the class
	Retryable bool   `json:"retryable"` // the same call may succeed later, unchanged (busy)
	Hint      string `json:"hint,omitempty"`
}

// errorClass is an error class with its name and exit code, as
// `memvault … --json` reports them (docs/API.md, "Errors in JSON mode").
type errorClass struct {
	err  error
	name string
	code int
}

func errorClasses() []errorClass {
	return []errorClass{
		{vault.ErrInvalid, "invalid", 2},
		{vault.ErrNotFound, "not_found", 3},
		{vault.ErrConflict, "conflict", 4},
		{vault.ErrBusy, "busy", 5},
		{vault.ErrCorrupt, "corrupt", 6},
		{vault.ErrIO, "io", 7},
		{vault.ErrRemote, "remote", 8},
		{vault.ErrForbidden, "forbidden", 10},
	}
}

// Classify names err's class, as the command line's exit code and its
// name, and says what a model can do about it.
func Classify(err error) ToolError {
	te := ToolError{Class: "internal", Code: 1}
	for _, c := range errorClasses() {
		if errors.Is(err, c.err) {
			te.Class, te.Code = c.name, c.code
			break
		}
	}
	te.Hint = vault.HintOf(err)
	switch te.Class {
	case "invalid":
		if te.Hint == "" {
			te.Hint = "the tool's input schema lists its arguments, their types and values; correct them and call again"
		}
	case "busy":
		// The library's hint is for a person at a shell.
		te.Retryable = true
		te.Hint = "another memvault process holds the vault for a moment; nothing was written: call the tool again"
	case "corrupt":
		// The library's hint offers --force, which no tool takes: a
		// damaged ledger is for a person to repair.
		te.Hint = "nothing was written: tell the user the vault needs `memvault repair` (`memvault verify` names every problem); " +
			"the reading tools (recall, expand, ledger, status) still work"
	case "forbidden":
		// The library's hint names a command for a person; a model
		// cannot change the policy (no tool writes one).
		te.Hint = "the vault's policy forbids this write from MCP; nothing of it was written and the refusal was " +
			"recorded as a violation: tell the user, who may write it with the command line or change the rule (memvault policy set)"
	case "not_found":
		if !errors.Is(err, errNoVault) {
			te.Hint = joinHints(te.Hint, "recall, ledger and status find the ids and threads that exist")
		}
	case "internal":
		te.Hint = joinHints(te.Hint, "a bug in memvault; the user may report it with this message")
	}
	return te
}

func joinHints(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// errorResult is the result of a failed tool call.
func errorResult(err error) *sdk.CallToolResult {
	te := Classify(err)
	text := "memvault: " + err.Error()
	if te.Hint != "" {
		text += "\nhint: " + te.Hint
	}
	if te.Retryable {
		text += "\nretryable: yes"
	}
	res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: true}
	res.Meta = sdk.Meta{ErrorMetaKey: te}
	return res
}
