// Package ops holds what memvault's front ends ask of a vault beyond one
// library call: the status report, the current thread of a working folder,
// a row recorded with its links resolved, a done that names the row it
// closes. The command line (cmd/memvault/internal/cli) and the MCP server
// (cmd/memvault/internal/mcp) both call these, so the two surfaces cannot
// drift apart. Nothing here prints: results are values, failures are
// vault/fault errors.
package ops
