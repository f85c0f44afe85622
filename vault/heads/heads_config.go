package heads

import (
	"errors"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/memvault/memvault/vault"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault/fault"
)

// HeadsConfig is the part of memvault.toml the heads read: budgets, the
// lease time, and the threads declared with their aliases.
//
//	[budgets]
//	memory_tokens = 1000
//	thread_tokens = 2000
//
//	[heads]
//	lease = "2m"
//
//	[threads."project:shop"]
//	aliases = ["shop", "storefront"]
//
// It is derived from a vault.Config (ConfigOf), so that rendering at a past
// commit (render --at) derives it from the memvault.toml of that commit.
type HeadsConfig struct {
	MemoryTokens int
	ThreadTokens int
	Lease        time.Duration
	Threads      []render.ThreadMeta // sorted by key
}

// Defaults of the heads configuration.
const (
	DefaultMemoryTokens = 1000
	defaultThreadTokens = 2000
	defaultHeadLease    = 2 * time.Minute
	maxAliasLen         = 64
)

// LoadHeadsConfig is ConfigOf the configuration the vault runs on.
func LoadHeadsConfig(v *vault.Vault) (HeadsConfig, error) {
	return ConfigOf(&v.Config)
}

// ConfigOf is the heads' part of f: checked, with its defaults filled in.
func ConfigOf(f *vault.Config) (HeadsConfig, error) {
	c := HeadsConfig{MemoryTokens: f.Budgets.MemoryTokens, ThreadTokens: f.Budgets.ThreadTokens, Lease: defaultHeadLease}
	if c.MemoryTokens <= 0 {
		c.MemoryTokens = DefaultMemoryTokens
	}
	if c.ThreadTokens <= 0 {
		c.ThreadTokens = defaultThreadTokens
	}
	if f.Heads.Lease != "" {
		d, err := time.ParseDuration(f.Heads.Lease)
		if err != nil || d <= 0 {
			return HeadsConfig{}, fault.New(vault.ErrInvalid, "%s: heads.lease %q: not a positive duration like 2m", vault.ConfigFile, f.Heads.Lease)
		}
		c.Lease = d
	}
	owner := map[string]string{} // alias → thread
	for key, t := range f.Threads {
		th, err := vault.ParseThread(key)
		if err != nil {
			e := fault.New(vault.ErrInvalid, "%s: [threads.%q]: not a thread key, want kind:slug", vault.ConfigFile, key)
			return HeadsConfig{}, e.WithHint("write the key quoted and lower case: [threads.\"project:shop\"]")
		}
		meta := render.ThreadMeta{Key: th.String()}
		for _, a := range t.Aliases {
			a = strings.ToLower(strings.Join(strings.Fields(a), " "))
			if err := checkAlias(a); err != nil {
				return HeadsConfig{}, fault.New(vault.ErrInvalid, "%s: [threads.%q] alias %q: %v", vault.ConfigFile, key, a, err)
			}
			if other, dup := owner[a]; dup && other != meta.Key {
				e := fault.New(vault.ErrInvalid, "%s: alias %q is declared by both %s and %s", vault.ConfigFile, a, other, meta.Key)
				return HeadsConfig{}, e.WithHint("an alias must name one thread; remove it from one of them")
			}
			if _, err := vault.ParseThread(a); err == nil && a != meta.Key {
				return HeadsConfig{}, fault.New(vault.ErrInvalid, "%s: [threads.%q] alias %q: looks like another thread's key", vault.ConfigFile, key, a)
			}
			if owner[a] == "" {
				owner[a] = meta.Key
				meta.Aliases = append(meta.Aliases, a)
			}
		}
		c.Threads = append(c.Threads, meta)
	}
	sort.Slice(c.Threads, func(i, j int) bool { return c.Threads[i].Key < c.Threads[j].Key })
	return c, nil
}

func checkAlias(a string) error {
	switch {
	case a == "":
		return errors.New("empty")
	case len(a) > maxAliasLen:
		return errors.New("longer than 64 bytes")
	case !utf8.ValidString(a):
		return errors.New("not valid utf-8")
	}
	for _, r := range a {
		if unicode.IsControl(r) {
			return errors.New("contains a control character")
		}
	}
	return nil
}

// ResolveThread turns what a person typed into a thread key: a key itself,
// or an alias declared in memvault.toml (compared without case).
func (c HeadsConfig) ResolveThread(s string) (vault.Thread, error) {
	if th, err := vault.ParseThread(s); err == nil {
		return th, nil
	}
	want := strings.ToLower(strings.Join(strings.Fields(s), " "))
	for _, t := range c.Threads {
		for _, a := range t.Aliases {
			if a == want {
				return vault.ParseThread(t.Key)
			}
		}
	}
	_, err := vault.ParseThread(s)
	if e := (*vault.Error)(nil); errors.As(err, &e) {
		e.Hint = "a thread key is lower case, like project:shop, or an alias declared in memvault.toml; list them with memvault threads"
	}
	return vault.Thread{}, err
}
