package hookstate

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// hookLogFile is where hooks report problems: a hook fails open and must
// never print them on the harness's screen.
const hookLogFile = ".logs/hooks.log"

// AppendHookLog appends line, with the time in front and its newlines
// flattened, as one line to the hook log of the vault at root. It takes a
// root rather than a *vault.Vault because a hook logs even when the vault does
// not open. The line is written in one O_APPEND write, so lines of
// concurrent hooks do not interleave; it is not synced: the log is for
// people debugging, not worth a sync on the harness's clock.
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
	text := time.Now().UTC().Format(time.RFC3339) + " " + strings.ReplaceAll(line, "\n", " ") + "\n"
	if _, err := f.WriteString(text); err != nil {
		return fault.IO("append "+hookLogFile, err)
	}
	return nil
}
