package transcript

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// What a session did, read from its tool messages: the files its edit
// tools wrote and the commands its shell tools ran, with the ones that
// failed. Each harness names its tools in its own way; these tables are
// the names, and the input fields that hold the path or the command.
var (
	// editTools are the tools that write a file: Claude Code's Edit,
	// MultiEdit, Write and NotebookEdit; Gemini CLI's write_file and
	// replace; OpenClaw's (and OpenCode's) write and edit. Codex's
	// apply_patch names its files in the patch (patchFiles).
	editTools = map[string]bool{
		"Edit": true, "MultiEdit": true, "Write": true, "NotebookEdit": true,
		"write_file": true, "replace": true, "edit": true, "write": true,
		"multiedit": true, "edit_file": true, "create_file": true,
	}
	// pathFields are the input fields that name the file an edit tool wrote.
	pathFields = []string{"file_path", "notebook_path", "path", "filePath", "absolute_path"}
	// shellTools are the tools that run a command: Claude Code's Bash,
	// Codex's exec_command, shell and local_shell_call, Gemini CLI's
	// run_shell_command, OpenClaw's exec and bash.
	shellTools = map[string]bool{
		"Bash": true, "bash": true, "exec_command": true, "shell": true, "local_shell_call": true,
		"container.exec": true, "run_shell_command": true, "exec": true, "shell_command": true,
	}
	// commandFields hold the command, a string or an argv list.
	commandFields = []string{"command", "cmd"}
)

// exitCodeRE finds the exit status a harness writes into a shell tool's
// output: Codex "Process exited with code 1", Claude Code "Exit code 1",
// Gemini CLI "Exit Code: 1", OpenClaw "Command exited with code 1".
var exitCodeRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\bexit(?:ed with)? code:? *(-?\d+)`)
})

// Command is one shell command a session ran.
type Command struct {
	Text string
	// Failed is true when the harness marked the result as an error or
	// its output gives a non-zero exit status (Exit, when known).
	Failed bool
	Exit   int
}

// Work gathers, message by message, the files a session's tools wrote and
// the commands they ran. A call and its result are matched by call id.
type Work struct {
	Files    []string
	Commands []Command
	seen     map[string]bool
	pending  map[string]int // call id → index in Commands
}

// Add reads one message; only tool messages count.
func (w *Work) Add(m Message) {
	if m.Role != RoleTool || m.Tool == nil {
		return
	}
	if w.seen == nil {
		w.seen, w.pending = map[string]bool{}, map[string]int{}
	}
	tc := m.Tool
	if len(tc.Input) > 0 {
		w.call(tc)
	}
	if i, ok := w.pending[tc.CallID]; ok && (tc.Output != "" || tc.Error || len(tc.Input) == 0) {
		out := tc.Output
		if out == "" {
			out = m.Text
		}
		w.result(i, out, tc.Error)
		if tc.CallID != "" {
			delete(w.pending, tc.CallID)
		}
	}
}

func (w *Work) call(tc *ToolCall) {
	name := tc.Name
	switch {
	case editTools[name]:
		w.file(inputString(tc.Input, pathFields))
	case name == "apply_patch" || strings.HasSuffix(name, ".apply_patch"):
		for _, f := range patchFiles(tc.Input) {
			w.file(f)
		}
	case shellTools[name]:
		cmd := inputString(tc.Input, commandFields)
		if cmd == "" {
			return
		}
		if strings.Contains(cmd, "*** Begin Patch") { // Codex's apply_patch through the shell
			for _, f := range patchFiles(tc.Input) {
				w.file(f)
			}
		}
		w.Commands = append(w.Commands, Command{Text: cmd})
		w.pending[tc.CallID] = len(w.Commands) - 1
	}
}

func (w *Work) result(i int, out string, failed bool) {
	c := &w.Commands[i]
	if m := exitCodeRE().FindStringSubmatch(out); m != nil {
		c.Exit, _ = strconv.Atoi(m[1])
		if c.Exit != 0 {
			failed = true
		}
	}
	c.Failed = failed
}

func (w *Work) file(path string) {
	path = strings.TrimSpace(path)
	if path == "" || w.seen[path] {
		return
	}
	w.seen[path] = true
	w.Files = append(w.Files, path)
}

// inputString returns the first of fields the input object holds, a
// string or a list of strings joined by spaces (an argv: a shell's
// "bash -lc CMD" gives CMD).
func inputString(in json.RawMessage, fields []string) string {
	var obj map[string]any
	if json.Unmarshal(in, &obj) != nil {
		return ""
	}
	for _, k := range fields {
		switch v := obj[k].(type) {
		case string:
			return v
		case []any:
			parts := make([]string, 0, len(v))
			for _, e := range v {
				if s, ok := e.(string); ok {
					parts = append(parts, s)
				}
			}
			if len(parts) == 3 && (parts[1] == "-lc" || parts[1] == "-c") {
				return parts[2]
			}
			return strings.Join(parts, " ")
		}
	}
	return ""
}

// patchFiles lists the files an apply_patch input names: "*** Add File:",
// "*** Update File:", "*** Delete File:" and "*** Move to:" lines of the
// patch, given as the input (a JSON string) or in its "input", "patch" or
// "command" field.
func patchFiles(in json.RawMessage) []string {
	var text string
	if json.Unmarshal(in, &text) != nil {
		var obj map[string]any
		if json.Unmarshal(in, &obj) == nil {
			for _, k := range []string{"input", "patch", "command", "cmd"} {
				switch v := obj[k].(type) {
				case string:
					text = v
				case []any:
					for _, e := range v {
						if s, ok := e.(string); ok {
							text += s + "\n"
						}
					}
				}
				if text != "" {
					break
				}
			}
		}
	}
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		for _, p := range []string{"*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:"} {
			if rest, ok := strings.CutPrefix(line, p); ok && strings.TrimSpace(rest) != "" {
				out = append(out, strings.TrimSpace(rest))
			}
		}
	}
	return out
}
