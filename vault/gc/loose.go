package gc

import (
	"fmt"
	"path/filepath"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/units"
)

// adviceLoose is the estimated number of loose git objects past which
// memvault advises a gc: git's own threshold for `gc --auto` (gc.auto,
// 6,700). memvault's commits are small (a few objects per event), so the
// vault passes it after about a thousand events; by then the loose objects
// take some 30 MiB of disk for a few MiB of data, and a gc packs them into
// a tenth of that.
const adviceLoose = 6700

// LooseObjects is an estimate of the loose objects in the vault's .git and
// whether a gc is advised, for status and for the hint after a write.
type LooseObjects struct {
	// Objects and DiskBytes are estimated from one fan-out folder of 256
	// (gitrepo.EstimateLoose), so they are rough below a few thousand.
	Objects   int   `json:"loose_objects_estimate"`
	DiskBytes int64 `json:"loose_disk_bytes_estimate"`
	Threshold int   `json:"threshold"`
	GCAdvised bool  `json:"gc_advised"`
	// AutoPack says the vault packs itself: the next write past
	// Threshold (then [gc] auto_loose) packs the loose objects, and no gc
	// is advised.
	AutoPack bool `json:"auto_pack"`
}

// EstimateLoose estimates the vault's loose git objects and the disk they
// take the way git's gc --auto does (gitrepo.EstimateLoose), for status. It
// takes no lock and changes nothing.
func EstimateLoose(v *vault.Vault) LooseObjects {
	n, disk := gitrepo.EstimateLoose(filepath.Join(v.Root, ".git"), true)
	if v.AutoPacks() {
		return LooseObjects{Objects: n, DiskBytes: disk, Threshold: v.AutoPackLoose(), AutoPack: true}
	}
	return LooseObjects{Objects: n, DiskBytes: disk, Threshold: adviceLoose, GCAdvised: n > adviceLoose}
}

// Advice is the line that says a gc would help, or "" when none would,
// for after every write: below the threshold it costs one directory read
// (BenchmarkAdvice); the disk the objects take is estimated only when the
// line is printed. Where the vault packs itself (vault.AutoPacks), there
// is nothing to advise.
func Advice(v *vault.Vault) string {
	if n, _ := gitrepo.EstimateLoose(filepath.Join(v.Root, ".git"), false); n <= adviceLoose || v.AutoPacks() {
		return ""
	}
	return EstimateLoose(v).Advice()
}

// Advice is the one line that says a gc would help, or "" when none would.
func (l LooseObjects) Advice() string {
	if !l.GCAdvised {
		return ""
	}
	return fmt.Sprintf("the vault holds ~%s loose git objects (~%s on disk); memvault gc packs them", units.Count(int64(l.Objects)), units.Bytes(l.DiskBytes))
}
