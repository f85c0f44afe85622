package vault

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/redact"
)

// memvault.toml is decoded here and nowhere else: once when the vault is
// opened, and again when a transaction of this process writes the file,
// so that everything a process does after `executor add` sees the new
// table. The features above the engine read their sections from the
// vault's Config and apply their own defaults and checks to them
// (heads.ConfigOf, continuity.ConfigOf, executor.List).

// ConfigFile is the name of the vault's configuration, at its root.
const ConfigFile = "memvault.toml"

// Config is memvault.toml. Every field has a default, so an empty file (or
// none) is a valid configuration. The engine's own settings have theirs
// filled in when the file is read; the sections of the features above it
// are kept as written (0 and "" for unset), each feature defaulting and
// checking its own, as noted at each.
type Config struct {
	Version int    `toml:"version"`
	Agent   string `toml:"agent"`
	Ledger  struct {
		SegmentBytes int64 `toml:"segment_bytes"`
	} `toml:"ledger"`
	Transcripts struct {
		PartBytes int64 `toml:"part_bytes"`
	} `toml:"transcripts"`
	Redact struct {
		Enabled *bool             `toml:"enabled"`
		Disable []string          `toml:"disable"`
		Extra   map[string]string `toml:"extra"`
	} `toml:"redact"`
	Lock struct {
		Timeout string `toml:"timeout"`
	} `toml:"lock"`
	// GC.Auto turns the automatic packing of loose git objects after a
	// write on or off (lock.go), on when unset; GC.AutoLoose is the estimate
	// of loose objects past which it packs (DefaultAutoPackLoose when 0).
	GC struct {
		Auto      *bool `toml:"auto"`
		AutoLoose int   `toml:"auto_loose"`
	} `toml:"gc"`
	Git struct {
		Name  string `toml:"name"`
		Email string `toml:"email"`
	} `toml:"git"`
	// Budgets are the heads' (heads.ConfigOf) and the protocol's
	// (continuity.ConfigOf).
	Budgets struct {
		MemoryTokens     int `toml:"memory_tokens"`
		ThreadTokens     int `toml:"thread_tokens"`
		ContinuityWords  int `toml:"continuity_words"`
		ContinuityTokens int `toml:"continuity_tokens"`
		LearningsTokens  int `toml:"learnings_tokens"`
		DecisionsTokens  int `toml:"decisions_tokens"`
		IndexTokens      int `toml:"index_tokens"`
		ContextWindow    int `toml:"context_window"`
	} `toml:"budgets"`
	// Heads.Lease is how long a head's lease holds (heads.ConfigOf).
	Heads struct {
		Lease string `toml:"lease"`
	} `toml:"heads"`
	// Threads declares threads and the aliases they answer to:
	// [threads."person:alice"] aliases = ["alice", "ally"]
	// (heads.ConfigOf checks them).
	Threads map[string]struct {
		Aliases []string `toml:"aliases"`
	} `toml:"threads"`
	// Executors are the registered executors by name, Delegate and
	// Summarise the settings of delegation and of model-written summaries
	// (vault/executor).
	Executors map[string]ExecutorTable `toml:"executors"`
	Delegate  struct {
		Concurrency int `toml:"concurrency"`
	} `toml:"delegate"`
	Summarise struct {
		Executor string `toml:"executor"`
		Timeout  string `toml:"timeout"`
	} `toml:"summarise"`
	// Embed is the embeddings endpoint of semantic search (vault/embed:
	// ConfigOf checks it; APIKey is read only to refuse a key in the file).
	Embed struct {
		URL, Model, Timeout string
		APIKeyEnv           string `toml:"api_key_env"`
		APIKey              string `toml:"api_key"`
		Dimensions, Batch   int
	} `toml:"embed"`
}

// ExecutorTable is one [executors.NAME] table as written; vault/executor
// checks it and fills in its defaults (docs/EXECUTORS.md).
type ExecutorTable struct {
	Command      string   `toml:"command"`
	Args         []string `toml:"args"`
	Timeout      string   `toml:"timeout"`
	Weight       int      `toml:"weight"`
	Env          []string `toml:"env"`
	Mode         string   `toml:"mode"`
	Status       string   `toml:"status"`
	Reason       string   `toml:"reason"`
	Ping         []string `toml:"ping"`
	PingTimeout  string   `toml:"ping_timeout"`
	MemoryLimit  string   `toml:"memory_limit"`
	Capabilities []string `toml:"capabilities"`
	Isolate      string   `toml:"isolate"` // "net": its own network namespace (docs/EXECUTORS.md)
}

// DecodeConfig decodes memvault.toml's text (empty: no file) into its
// sections as written, without the defaults and checks the vault applies
// when it runs on it: what reading the file of another commit (render
// --at) or a text about to be written needs. A text that does not decode,
// a value of the wrong type in any section included, is ErrInvalid naming
// the line.
func DecodeConfig(data []byte) (Config, error) {
	var c Config
	if _, err := toml.Decode(string(data), &c); err != nil {
		return Config{}, &Error{Class: ErrInvalid, Msg: ConfigFile + ": " + strings.ReplaceAll(err.Error(), "\n", " "), Err: err,
			Hint: "fix the file by hand; memvault init writes a fresh one if you delete it"}
	}
	return c, nil
}

// parseConfig reads memvault.toml's text as the vault runs on it: decoded,
// the engine's settings checked and defaulted, and its redaction rules
// compiled (nil when redaction is off).
func parseConfig(data []byte) (Config, *redact.Rules, error) {
	c, err := DecodeConfig(data)
	if err != nil {
		return Config{}, nil, err
	}
	if c.Agent == "" {
		c.Agent = "default"
	}
	if err := fileio.CheckName("memvault.toml: agent", c.Agent); err != nil {
		return Config{}, nil, err
	}
	if c.Ledger.SegmentBytes <= 0 {
		c.Ledger.SegmentBytes = DefaultSegmentBytes
	}
	if c.Transcripts.PartBytes <= 0 {
		c.Transcripts.PartBytes = DefaultPartBytes
	}
	if c.Git.Name == "" {
		c.Git.Name = "memvault"
	}
	if c.Git.Email == "" {
		c.Git.Email = "memvault@localhost"
	}
	var rules *redact.Rules
	if c.Redact.Enabled == nil || *c.Redact.Enabled {
		rules, err = redact.NewRules(redact.Config{Disable: c.Redact.Disable, Extra: c.Redact.Extra})
		if err != nil {
			return Config{}, nil, &Error{Class: ErrInvalid, Msg: ConfigFile + ": " + err.Error(), Err: err}
		}
	}
	if c.Lock.Timeout != "" {
		if _, err := time.ParseDuration(c.Lock.Timeout); err != nil {
			return Config{}, nil, fault.New(ErrInvalid, "%s: lock.timeout %q: not a duration like 10s", ConfigFile, c.Lock.Timeout)
		}
	}
	return c, rules, nil
}

func (v *Vault) loadConfig() error {
	data, err := v.Files().ReadFile(filepath.Join(v.Root, ConfigFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fault.IO("read "+ConfigFile, err)
	}
	return v.applyConfig(string(data))
}

// applyConfig makes text (memvault.toml) the configuration the vault runs
// on; on an error the vault is left as it was.
func (v *Vault) applyConfig(text string) error {
	c, rules, err := parseConfig([]byte(text))
	if err != nil {
		return err
	}
	v.Config, v.Rules = c, rules
	return nil
}

// ReloadConfig reads memvault.toml again, for a vault whose file was
// changed by something other than its own transactions, which keep the
// configuration current themselves: a sync's merge.
func (v *Vault) ReloadConfig() error {
	if err := v.loadConfig(); err != nil {
		return err
	}
	v.configErr, v.fallbackConfig = nil, nil
	return nil
}

// checkConfigWrite reads the memvault.toml the transaction is about to
// write, before anything is written: memvault never writes a
// configuration it cannot run on, and the vault runs on the new one from
// the moment the commit holds it, so that the rest of the process (the
// report of `executor add`, a summary that names the executor just
// added) sees what the file says.
func (tx *Tx) checkConfigWrite() error {
	for _, f := range tx.files {
		if f.rel.String() != ConfigFile {
			continue
		}
		c, rules, err := parseConfig(f.data)
		if err != nil {
			return err
		}
		tx.committed = append(tx.committed, func() { tx.v.Config, tx.v.Rules = c, rules })
	}
	return nil
}

// ConfigData is memvault.toml's text as the vault runs on it: the file,
// or, for a vault opened for capture on a file that does not parse, the
// configuration it fell back to. It is what an edit of the file starts
// from; the settings themselves are read from v.Config.
func (v *Vault) ConfigData() ([]byte, error) {
	if v.fallbackConfig != nil {
		return v.fallbackConfig, nil
	}
	data, err := v.Files().ReadFile(filepath.Join(v.Root, ConfigFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fault.IO("read "+ConfigFile, err)
	}
	return data, nil
}

// committedConfig returns memvault.toml as HEAD commits it.
func committedConfig(r *gitrepo.Repo) (string, bool) {
	tree, err := r.TreeAt("HEAD")
	if err != nil || tree == nil {
		return "", false
	}
	f, err := tree.File(ConfigFile)
	if err != nil {
		return "", false
	}
	text, err := f.Contents()
	return text, err == nil
}

// LockTimeout is how long a writer waits for the vault lock: the
// MEMVAULT_LOCK_TIMEOUT environment variable, else memvault.toml, else 10s.
func (v *Vault) LockTimeout() (time.Duration, error) {
	if s := os.Getenv("MEMVAULT_LOCK_TIMEOUT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, fault.New(ErrInvalid, "MEMVAULT_LOCK_TIMEOUT %q: not a duration like 10s", s)
		}
		return d, nil
	}
	if v.Config.Lock.Timeout != "" {
		d, _ := time.ParseDuration(v.Config.Lock.Timeout)
		return d, nil
	}
	return 10 * time.Second, nil
}
