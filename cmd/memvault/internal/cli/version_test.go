package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionFrom: what `memvault version` says for each way a binary is
// built (issue 38): a build from a checkout names its commit, dirty flag
// and time from the toolchain's vcs.* settings; a link-time Revision
// stands in where the toolchain recorded none (a git worktree,
// -buildvcs=false); a link-time Version wins over the module's; and a
// devel build that knows no commit says so instead of a bare "devel".
func TestVersionFrom(t *testing.T) {
	vcs := func(version string, kv ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Path: "github.com/memvault/memvault", Version: version}}
		for i := 0; i+1 < len(kv); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return info
	}
	const rev = "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d"
	cases := []struct {
		name             string
		info             *debug.BuildInfo
		version, linkRev string
		want             string // the line up to the Go version
	}{
		{"checkout, clean", vcs("(devel)", "vcs", "git", "vcs.revision", rev, "vcs.time", "2026-11-29T10:00:00Z", "vcs.modified", "false"), "dev", "",
			"memvault devel (1a2b3c4d5e6f, 2026-11-29T10:00:00Z) go1.99"},
		{"checkout, dirty", vcs("(devel)", "vcs.revision", rev, "vcs.time", "2026-11-29T10:00:00Z", "vcs.modified", "true"), "dev", "",
			"memvault devel (1a2b3c4d5e6f, 2026-11-29T10:00:00Z, modified) go1.99"},
		{"pseudo-version", vcs("v0.0.0-20261129100000-1a2b3c4d5e6f", "vcs.revision", rev), "dev", "",
			"memvault v0.0.0-20261129100000-1a2b3c4d5e6f (1a2b3c4d5e6f) go1.99"},
		{"nothing recorded", vcs("(devel)"), "dev", "",
			"memvault devel (revision not recorded) go1.99"},
		{"no build info at all", nil, "dev", "",
			"memvault devel (revision not recorded) go"},
		{"worktree, linked revision", vcs("(devel)"), "dev", rev,
			"memvault devel (1a2b3c4d5e6f) go1.99"},
		{"worktree, linked dirty revision", vcs("(devel)"), "dev", rev + "-dirty",
			"memvault devel (1a2b3c4d5e6f, modified) go1.99"},
		{"the toolchain's commit wins over a linked one", vcs("(devel)", "vcs.revision", rev), "dev", "ffffffffffff",
			"memvault devel (1a2b3c4d5e6f) go1.99"},
		{"linked version wins", vcs("v0.0.0-20261129100000-1a2b3c4d5e6f", "vcs.revision", rev), "v1.2.3", "",
			"memvault v1.2.3 (1a2b3c4d5e6f) go1.99"},
		{"linked version, no commit: no note", vcs("(devel)"), "v1.2.3", "",
			"memvault v1.2.3 go1.99"},
	}
	for _, c := range cases {
		got := versionFrom(c.info, c.version, c.linkRev).String()
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want it to begin %q", c.name, got, c.want)
		}
	}
	v := versionFrom(vcs("(devel)"), "dev", rev+"-dirty")
	if v.Revision != rev || !v.Modified {
		t.Errorf("linked dirty revision: %+v", v)
	}
}
