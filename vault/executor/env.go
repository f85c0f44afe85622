package executor

import (
	"slices"
	"strings"
)

// baseEnv are the variables every executor gets when they are set (PWD is
// set to its working directory, whatever the parent's is).
var baseEnv = []string{"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR"}

// secretWords are what, found in a variable's name, make it a credential.
var secretWords = []string{"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"}

// LooksSecret reports whether a variable's name suggests a credential.
func LooksSecret(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// Environ builds an executor's environment from the parent's (KEY=VALUE
// entries): the base set, every LC_*, the allow-list, PWD = dir; never a
// name that looks like a credential. The result is sorted.
func Environ(parent []string, allow []string, dir string) []string {
	keep := func(name string) bool {
		if LooksSecret(name) || name == "PWD" {
			return false
		}
		return slices.Contains(baseEnv, name) || strings.HasPrefix(name, "LC_") || slices.Contains(allow, name)
	}
	seen := map[string]bool{}
	var out []string
	// The last entry of a name wins, as in os.Getenv.
	for i := len(parent) - 1; i >= 0; i-- {
		name, _, ok := strings.Cut(parent[i], "=")
		if !ok || seen[name] || !keep(name) {
			continue
		}
		seen[name] = true
		out = append(out, parent[i])
	}
	out = append(out, "PWD="+dir)
	slices.Sort(out)
	return out
}
