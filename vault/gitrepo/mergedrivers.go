package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// Registering memvault's merge driver with git, so that a plain `git pull`
// or `git merge` between two clones merges the vault's files with MergeFile
// rather than with git's line merge, which puts conflict markers into the
// ledger whenever both clones wrote an event.
//
// Git needs two things: .gitattributes, committed in the vault, maps the
// vault's paths to the driver's name; .git/config, which git never copies
// with a clone, says what command that name runs. A clone therefore has the
// attributes at once but runs git's own merge until memvault registers the
// driver there (init, install git, and the writer's first transaction in a
// fresh clone).

// MergeDriverName is the driver's name in .gitattributes and .git/config.
const MergeDriverName = "memvault"

// GitattributesFile is where the vault's attributes live.
const GitattributesFile = ".gitattributes"

// gitattributesLines are the attributes a vault needs, one per line: the
// files whose merge is not git's line merge. memvault.toml, .gitignore and
// files people add stay with git's.
var gitattributesLines = []string{
	"/ledger/**/*.jsonl merge=" + MergeDriverName,
	"/transcripts/**/*.jsonl merge=" + MergeDriverName,
	"/MEMORY.md merge=" + MergeDriverName,
	"/CONTINUITY.md merge=" + MergeDriverName,
	"/threads/**/*.md merge=" + MergeDriverName,
	"/nodes/**/*.md merge=" + MergeDriverName,
	"/.rendered/** merge=" + MergeDriverName,
}

const gitattributesHeader = "# memvault: how git merges the vault's files when two clones meet\n" +
	"# (memvault merge-driver; docs/specs/STORAGE.md, \"Merging clones\").\n"

// GitattributesText is the .gitattributes of a new vault.
func GitattributesText() string {
	return gitattributesHeader + strings.Join(gitattributesLines, "\n") + "\n"
}

// missingAttributes lists the lines of gitattributesLines that data lacks.
func missingAttributes(data []byte) []string {
	have := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		have[strings.Join(strings.Fields(l), " ")] = true
	}
	var out []string
	for _, l := range gitattributesLines {
		if !have[l] {
			out = append(out, l)
		}
	}
	return out
}

// WithAttributes returns data with the missing lines appended, or nil when
// nothing is missing. What a person wrote stays as it is, above them.
func WithAttributes(data []byte) []byte {
	missing := missingAttributes(data)
	if len(missing) == 0 {
		return nil
	}
	out := bytes.Clone(data)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	if len(missing) == len(gitattributesLines) {
		out = append(out, gitattributesHeader...)
	}
	return append(out, strings.Join(missing, "\n")+"\n"...)
}

// driverCommand is the command git runs for the driver. Git runs it with
// the shell, after putting the files' paths in place of %O (base), %A
// (ours, where the result goes), %B (theirs) and %P (the path). When the
// binary is gone (memvault moved or uninstalled), git merge-file does what
// git would have done without the driver, so the merge stops with the
// usual conflict markers rather than with one side's file.
func driverCommand(bin string) string {
	q := "'" + strings.ReplaceAll(bin, "'", `'\''`) + "'"
	return "if test -x " + q + "; then " + q + " merge-driver auto %O %A %B %P; " +
		"else git merge-file -L ours -L base -L theirs %A %O %B; fi"
}

// driverBin reads the binary back out of a command driverCommand wrote.
func driverBin(cmd string) (string, bool) {
	rest, ok := strings.CutPrefix(cmd, "if test -x ")
	if !ok {
		return "", false
	}
	var b strings.Builder
	for len(rest) > 0 && rest[0] != ' ' && rest[0] != ';' {
		switch {
		case rest[0] == '\'':
			end := strings.IndexByte(rest[1:], '\'')
			if end < 0 {
				return "", false
			}
			b.WriteString(rest[1 : 1+end])
			rest = rest[end+2:]
		case strings.HasPrefix(rest, `\'`):
			b.WriteByte('\'')
			rest = rest[2:]
		default:
			return "", false
		}
	}
	return b.String(), b.Len() > 0
}

// configQuote writes a value for git's config file: in double quotes, so
// that ';' and '#' in the command are not comments, with '\' and '"'
// escaped.
func configQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// configUnquote reads a value as git's config parser does: quotes removed,
// escapes resolved, a comment outside quotes cut, outer blanks trimmed.
func configUnquote(raw string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(raw):
			i++
			switch raw[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			default:
				b.WriteByte(raw[i])
			}
		case !quoted && (c == ';' || c == '#'):
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// The patterns of a git config's lines, compiled on first use: every
// process would pay for them at start, and only a write in a fresh clone,
// doctor and sync read the config.
var (
	sectionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\[`) })
	ourSecRE  = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^\s*\[\s*merge\s+"` + MergeDriverName + `"\s*\]\s*$`)
	})
	keyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^\s*(name|driver)\s*=(.*)$`) })
)

// driverSection finds memvault's section in a git config: the index of
// its header line and of the line after it ends (-1, -1 when absent), and
// the lines of its name and driver keys (-1 when absent).
func driverSection(lines []string) (start, end, name, driver int) {
	start, end, name, driver = -1, -1, -1, -1
	for i, l := range lines {
		switch {
		case start >= 0 && end < 0 && sectionRE().MatchString(l):
			end = i
		case start < 0 && ourSecRE().MatchString(l):
			start = i
		case start >= 0 && end < 0:
			if m := keyRE().FindStringSubmatch(l); m != nil {
				if strings.EqualFold(m[1], "name") {
					name = i
				} else {
					driver = i
				}
			}
		}
	}
	if start >= 0 && end < 0 {
		end = len(lines)
	}
	return start, end, name, driver
}

// withDriver returns the git config data with memvault's driver registered
// for bin, changing nothing else: a missing section is appended, a missing
// key added at the end of the section, a driver line naming another
// command replaced. nil means it was registered already.
func withDriver(data []byte, bin string) []byte {
	const nameLine = "\tname = memvault: the vault's files merged by kind"
	driverLine := "\tdriver = " + configQuote(driverCommand(bin))
	lines := strings.Split(string(data), "\n")
	start, end, name, driver := driverSection(lines)
	if start < 0 {
		out := bytes.Clone(data)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		return append(out, "[merge \""+MergeDriverName+"\"]\n"+nameLine+"\n"+driverLine+"\n"...)
	}
	m := keyRE().FindStringSubmatch(lineAt(lines, driver))
	if name >= 0 && m != nil && configUnquote(m[2]) == driverCommand(bin) {
		return nil
	}
	if driver >= 0 {
		lines[driver] = driverLine
	}
	// Keys go after the section's last non-blank line.
	at := end
	for at > start+1 && strings.TrimSpace(lines[at-1]) == "" {
		at--
	}
	var add []string
	if name < 0 {
		add = append(add, nameLine)
	}
	if driver < 0 {
		add = append(add, driverLine)
	}
	lines = append(lines[:at], append(add, lines[at:]...)...)
	return []byte(strings.Join(lines, "\n"))
}

func lineAt(lines []string, i int) string {
	if i < 0 {
		return ""
	}
	return lines[i]
}

// withoutDriver returns the git config data without memvault's section, or
// nil when it has none.
func withoutDriver(data []byte) []byte {
	lines := strings.Split(string(data), "\n")
	start, end, _, _ := driverSection(lines)
	if start < 0 {
		return nil
	}
	if end == len(lines) && end > start+1 && lines[end-1] == "" {
		end-- // the file's final newline is not the section's
	}
	return []byte(strings.Join(append(lines[:start:start], lines[end:]...), "\n"))
}

// gitConfigPath finds the config file of the repository at root: .git is a
// folder, or a file naming one ("gitdir: …"), whose config may live in a
// common folder shared by worktrees.
func gitConfigPath(root string) (string, error) {
	dir := filepath.Join(root, ".git")
	info, err := os.Stat(dir)
	if err != nil {
		return "", fault.IO("merge driver: find .git", err)
	}
	if !info.IsDir() {
		data, err := os.ReadFile(dir)
		if err != nil {
			return "", fault.IO("merge driver: read .git", err)
		}
		target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
		if !ok {
			return "", fault.New(fault.ErrInvalid, "merge driver: %s is not a git folder or a gitdir link", dir)
		}
		dir = strings.TrimSpace(target)
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
	}
	if common, err := os.ReadFile(filepath.Join(dir, "commondir")); err == nil {
		c := strings.TrimSpace(string(common))
		if !filepath.IsAbs(c) {
			c = filepath.Join(dir, c)
		}
		dir = c
	}
	return filepath.Join(dir, "config"), nil
}

// RegisterMergeDrivers registers memvault's merge driver, running the
// binary bin (an absolute path), in the .git/config of the vault at root.
// It is safe to repeat: it reports whether the file changed, and rewrites
// only the driver's command when the binary moved. The config is a
// person's file as much as git's, so everything else in it stays byte for
// byte. It takes no vault lock: git reads the file without one.
func RegisterMergeDrivers(root, bin string) (changed bool, err error) {
	return editGitConfig(root, func(data []byte) []byte { return withDriver(data, bin) })
}

// UnregisterMergeDrivers removes memvault's section from the .git/config of
// the vault at root; .gitattributes stays, and git merges those files with
// its own line merge once the driver is not defined.
func UnregisterMergeDrivers(root string) (changed bool, err error) {
	return editGitConfig(root, withoutDriver)
}

func editGitConfig(root string, edit func([]byte) []byte) (bool, error) {
	path, err := gitConfigPath(root)
	if err != nil {
		return false, err
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fault.IO("merge driver: read git config", err)
	}
	out := edit(data)
	if out == nil {
		return false, nil
	}
	if err := fileio.WriteKeepMode(path, out, fileio.FilePerm); err != nil {
		return false, fault.IO("merge driver: write "+path, err)
	}
	return true, nil
}

// MergeSetupPending lists what clones.EnsureMergeSetup would change for bin in the
// vault at root: ".git/config" (the driver is not registered for bin) and
// ".gitattributes" (it lacks memvault's lines). Nothing is written.
func MergeSetupPending(root, bin string) ([]string, error) {
	var out []string
	path, err := gitConfigPath(root)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fault.IO("merge driver: read git config", err)
	}
	if withDriver(data, bin) != nil {
		out = append(out, ".git/config")
	}
	attrs, err := ReadAttributes(root)
	if err != nil {
		return nil, err
	}
	if len(missingAttributes(attrs)) > 0 {
		out = append(out, GitattributesFile)
	}
	return out, nil
}

// ReadAttributes reads the vault's .gitattributes; none reads as empty.
func ReadAttributes(root string) ([]byte, error) {
	data, err := fileio.At(root).ReadFile(filepath.Join(root, GitattributesFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fault.IO("read "+GitattributesFile, err)
	}
	return data, nil
}

// MergeDriversStatus tells whether git merges the vault at root with
// memvault's driver, for doctor and status: ok when .gitattributes maps the
// vault's files to it and .git/config defines it with a binary that
// exists; detail says what is missing, or which binary runs.
func MergeDriversStatus(root string) (ok bool, detail string) {
	attrs, err := ReadAttributes(root)
	if err != nil {
		return false, err.Error()
	}
	if missing := missingAttributes(attrs); len(missing) > 0 {
		return false, fmt.Sprintf("%s lacks %d of memvault's merge lines (run memvault install git)", GitattributesFile, len(missing))
	}
	path, err := gitConfigPath(root)
	if err != nil {
		return false, err.Error()
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, "read git config: " + err.Error()
	}
	lines := strings.Split(string(data), "\n")
	start, _, _, driver := driverSection(lines)
	if start < 0 || driver < 0 {
		return false, "the merge driver is not registered in .git/config: git merges the vault line by line (run memvault install git)"
	}
	m := keyRE().FindStringSubmatch(lines[driver])
	bin, found := driverBin(configUnquote(m[2]))
	if !found {
		return true, "the merge driver runs a command memvault did not write: " + configUnquote(m[2])
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return false, "the merge driver's binary " + bin + " is missing: git merges the vault line by line (run memvault install git)"
	}
	return true, "merge driver registered: " + bin
}
