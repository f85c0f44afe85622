package vault

// Progress is how long work says how far it has got. The vault never
// prints: gc, import, reindex, verify and sync report steps to the vault's
// Progress when one is set, and the command line draws them on a terminal
// (cmd/memvault/internal/cli/progress.go). Hooks never set one, so the
// reports cost them a nil check.
//
// It is a field of the Vault rather than an option of each call because
// the long operations call each other (sync verifies and reindexes, import
// catches the index up): one reporter set on the handle reaches them all,
// and Verify and Import keep the signatures their many callers use.
type Progress func(Step)

// Step is one report of long work: Phase says what is being done ("gc:
// packing objects"), Done how many Units of it are done out of Total (0
// when the total is not known in advance).
type Step struct {
	Phase string
	Done  int64
	Total int64
	// Unit names what is counted: "objects", "files", "segments", or
	// "bytes", which a renderer prints in binary units.
	Unit string
}

// Step reports a step when p is set. It is called often (once per object
// in gc's walk); the renderer throttles what it draws.
func (p Progress) Step(phase, unit string, done, total int64) {
	if p != nil {
		p(Step{Phase: phase, Done: done, Total: total, Unit: unit})
	}
}
