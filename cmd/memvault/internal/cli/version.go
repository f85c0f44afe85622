package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// `memvault version` and `memvault --version`: which build this is, from
// what the Go toolchain recorded in the binary. It opens nothing and reads
// no file, so it is also the floor of a memvault process's start-up
// (docs/PERFORMANCE.md).

// versionInfo is what `memvault version --json` prints.
type versionInfo struct {
	// Version is the module's version (v1.2.3, or a pseudo-version for a
	// `go install …@commit`), Version when set at link time, else "devel"
	// for a build from a checkout.
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"` // the commit built from (vcs.revision)
	Time     string `json:"time,omitempty"`     // that commit's time (vcs.time)
	Modified bool   `json:"modified"`           // the work tree had uncommitted changes (vcs.modified)
	Go       string `json:"go"`                 // the toolchain that built it
	Platform string `json:"platform"`           // GOOS/GOARCH
}

type versionOptions struct{ jsonOnly }

func newVersionCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "version",
		Usage: "print the version, the commit it was built from and the Go version",
	}
}

func runVersion(_ context.Context, opts versionOptions, e env) error {
	return printVersion(e.stdout, opts.json)
}

// buildVersion reads the build information the binary carries.
func buildVersion() versionInfo {
	info, _ := debug.ReadBuildInfo()
	return versionFrom(info, Version, Revision)
}

// versionFrom is the version of a build whose toolchain recorded info
// (nil: nothing), linked with the values of Version and Revision. The
// toolchain's vcs.* settings come first; Revision, set at link time, stands
// in for them when the toolchain recorded none (a build in a git worktree,
// which Go does not stamp, or with -buildvcs=false). Version, when set at
// link time, wins over the module's.
func versionFrom(info *debug.BuildInfo, linkedVersion, linkedRevision string) versionInfo {
	v := versionInfo{Version: "devel", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info != nil {
		if mv := info.Main.Version; mv != "" && mv != "(devel)" {
			v.Version = mv
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
		if info.GoVersion != "" {
			v.Go = info.GoVersion
		}
	}
	if v.Revision == "" && linkedRevision != "" {
		// git describe --dirty's suffix, or a plain commit id.
		rev, dirty := strings.CutSuffix(linkedRevision, "-dirty")
		v.Revision, v.Modified = rev, dirty
	}
	if linkedVersion != "" && linkedVersion != "dev" {
		v.Version = linkedVersion
	}
	return v
}

// String is the one line `memvault version` prints:
// memvault v1.2.3 (1a2b3c4d5e6f, 2026-11-23T10:00:00Z, modified) go1.26.8 linux/amd64
// A build that recorded no commit says so, so that "devel" alone is never
// mistaken for a build of a known commit:
// memvault devel (revision not recorded) go1.26.8 linux/amd64
func (v versionInfo) String() string {
	var build []string
	if v.Revision != "" {
		build = append(build, v.Revision[:min(12, len(v.Revision))])
	} else if v.Version == "devel" {
		build = append(build, "revision not recorded")
	}
	if v.Time != "" {
		build = append(build, v.Time)
	}
	if v.Modified {
		build = append(build, "modified")
	}
	line := "memvault " + v.Version
	if len(build) > 0 {
		line += " (" + strings.Join(build, ", ") + ")"
	}
	return line + " " + v.Go + " " + v.Platform
}

func printVersion(w io.Writer, asJSON bool) error {
	v := buildVersion()
	if asJSON {
		return printJSON(w, v)
	}
	_, err := fmt.Fprintln(w, v)
	return err
}
