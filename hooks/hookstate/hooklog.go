package hookstate

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/redact"
)

// hookLogFile is where hooks report problems: a hook fails open and must
// never print them on the harness's screen.
const hookLogFile = ".logs/hooks.log"

// AppendHookLog appends line, with the time in front and its newlines
// flattened, as one line to the hook log of the vault at root. It takes a
// root rather than a *vault.Vault because a hook logs even when the vault does
// not open. The line is written in one O_APPEND write, so lines of
// concurrent hooks do not interleave; it is not synced: the log is for
// people debugging, not worth a sync on the harness's clock. The line is
// redacted first.
func AppendHookLog(root, line string) error {
	path := filepath.Join(root, filepath.FromSlash(hookLogFile))
	fsys := fileio.At(root)
	if err := fsys.MkdirAll(filepath.Dir(path)); err != nil {
		return fault.IO("create .logs", err)
	}
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, fileio.FilePerm)
	if err != nil {
		return fault.IO("append "+hookLogFile, err)
	}
	defer f.Close()
	// Redacted as every text memvault writes, with the default rules: the
	// log is written when the vault does not open, and a line may quote a
	// payload's session id or an error that quotes the input.
	line, _ = redact.Text(line, redact.DefaultRules())
	text := time.Now().UTC().Format(time.RFC3339) + " " + strings.ReplaceAll(line, "\n", " ") + "\n"
	if _, err := f.WriteString(text); err != nil {
		return fault.IO("append "+hookLogFile, err)
	}
	return nil
}
