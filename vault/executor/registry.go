package executor

import (
	"errors"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/configedit"
	"github.com/memvault/memvault/vault/fault"
)

// Entry is one registered executor: a [executors.NAME] table of
// memvault.toml (vault.ExecutorTable), checked, with its defaults.
type Entry struct {
	Name    string        `json:"name"`
	Command string        `json:"command"`
	Args    []string      `json:"args"`
	Timeout time.Duration `json:"-"`
	Weight  int           `json:"weight"`
	Env     []string      `json:"env"`
	Mode    string        `json:"mode"`
	Status  string        `json:"status"`
	// Ping, when set, are the arguments a ping runs the command with
	// instead of sending it a ping (a harness CLI's --version): it passes
	// when the command exits 0 and prints something.
	Ping   []string `json:"ping,omitempty"`
	Reason string   `json:"reason,omitempty"`
	// Capabilities are what it can do: what its last ping found (an
	// envelope executor's reply), else what add declared, else
	// DefaultCapability alone (Caps).
	Capabilities []string `json:"capabilities"`

	TimeoutText string `json:"timeout"` // as written; Timeout is what it means
	// PingTimeout bounds a ping (PingTimeout, 2 s, when ping_timeout is
	// not written).
	PingTimeout     time.Duration `json:"-"`
	PingTimeoutText string        `json:"ping_timeout,omitempty"`
	// MemoryLimit bounds the address space of its process (RLIMIT_AS, set
	// on Linux right after it starts); 0: none. Written as memory_limit,
	// "1GiB".
	MemoryLimit     int64  `json:"-"`
	MemoryLimitText string `json:"memory_limit,omitempty"`
	// Isolate is IsolateNet to run it in a network namespace of its own
	// (no network, not even the host's loopback), where the platform
	// allows it; "" for none.
	Isolate string `json:"isolate,omitempty"`
}

// IsolateNet is the isolation `executor add --isolate net` asks for.
const IsolateNet = "net"

// CheckIsolation refuses an isolation memvault does not know, and one this
// machine cannot give, in one line.
func CheckIsolation(name, isolate string) error {
	switch isolate {
	case "":
		return nil
	case IsolateNet:
		if err := NetIsolationAvailable(); err != nil {
			return fault.New(fault.ErrInvalid, "executor %s: isolate net: not available here: %v", name, err).
				WithHint("register it without --isolate, or on a Linux machine with user namespaces")
		}
		return nil
	}
	return fault.New(fault.ErrInvalid, "executor %s: isolate %q: want net", name, isolate)
}

// entryOf is the table t of the executor name, as written.
func entryOf(name string, t vault.ExecutorTable) Entry {
	return Entry{Name: name, Command: t.Command, Args: t.Args, TimeoutText: t.Timeout, Weight: t.Weight, Env: t.Env,
		Mode: t.Mode, Status: t.Status, Reason: t.Reason, Ping: t.Ping, PingTimeoutText: t.PingTimeout,
		MemoryLimitText: t.MemoryLimit, Capabilities: t.Capabilities, Isolate: t.Isolate}
}

// MinMemoryLimit is the least memory_limit: a program's runtime alone
// reserves more address space than a few MiB.
const MinMemoryLimit = 16 << 20

// ParseSize reads a size: bytes, or a number with KiB, MiB, GiB or TiB
// ("1.5GiB"); K, M, G and T are the same binary units.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRightFunc(t, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' })
	unit := strings.TrimSpace(t[len(num):])
	mult := map[string]float64{"": 1, "B": 1, "K": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MiB": 1 << 20,
		"G": 1 << 30, "GiB": 1 << 30, "T": 1 << 40, "TiB": 1 << 40}[unit]
	f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if mult == 0 || err != nil || f <= 0 || f*mult >= 1<<62 {
		return 0, fault.New(fault.ErrInvalid, "size %q: want bytes or a number with KiB, MiB, GiB or TiB, like 2GiB", s)
	}
	return int64(f * mult), nil
}

// FormatSize writes n bytes in the largest binary unit that keeps it whole
// to a hundredth.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && (n*100)%u.size == 0 {
			return strconv.FormatFloat(float64(n)/float64(u.size), 'f', -1, 64) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// CheckName validates an executor's name: 1–32 of a-z, 0-9, - and _,
// starting with a letter or a digit.
func CheckName(name string) error {
	ok := name != "" && len(name) <= 32
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case (r == '-' || r == '_') && i > 0:
		default:
			ok = false
		}
	}
	if !ok {
		return fault.New(fault.ErrInvalid, "executor: name %q: want 1–32 of a-z, 0-9, - and _, starting with a letter or digit", name)
	}
	return nil
}

// CheckCapability validates a capability's name: 1–32 of a-z, 0-9, -, _
// and ., starting with a letter or a digit.
func CheckCapability(c string) error {
	ok := c != "" && len(c) <= 32
	for i, r := range c {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case (r == '-' || r == '_' || r == '.') && i > 0:
		default:
			ok = false
		}
	}
	if !ok {
		return fault.New(fault.ErrInvalid, "capability %q: want 1–32 of a-z, 0-9, -, _ and ., starting with a letter or digit", c)
	}
	return nil
}

// checkCapabilities validates a list of capabilities and returns it
// sorted, without repeats.
func checkCapabilities(l []string) ([]string, error) {
	if len(l) > maxCapabilities {
		return nil, fault.New(fault.ErrInvalid, "capabilities: %d, at most %d", len(l), maxCapabilities)
	}
	for _, c := range l {
		if err := CheckCapability(c); err != nil {
			return nil, err
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(l))), nil
}

// Caps are e's capabilities: those recorded, else DefaultCapability.
func (e Entry) Caps() []string {
	if len(e.Capabilities) == 0 {
		return []string{DefaultCapability}
	}
	return e.Capabilities
}

// Can reports whether e has the capability c ("" is no requirement).
func (e Entry) Can(c string) bool {
	return c == "" || slices.Contains(e.Caps(), c)
}

// check validates e and fills in its defaults.
func (e *Entry) check() error {
	if err := CheckName(e.Name); err != nil {
		return err
	}
	where := vault.ConfigFile + ": [executors." + e.Name + "]"
	if strings.TrimSpace(e.Command) == "" {
		return fault.New(fault.ErrInvalid, "%s: no command", where)
	}
	e.Timeout = DefaultTimeout
	if e.TimeoutText != "" {
		d, err := time.ParseDuration(e.TimeoutText)
		if err != nil || d <= 0 {
			return fault.New(fault.ErrInvalid, "%s: timeout %q: not a positive duration like 5s", where, e.TimeoutText)
		}
		e.Timeout = d
	}
	e.TimeoutText = e.Timeout.String()
	e.MemoryLimit = 0
	if e.MemoryLimitText != "" {
		n, err := ParseSize(e.MemoryLimitText)
		if err != nil {
			return fault.New(fault.ErrInvalid, "%s: memory_limit: %v", where, err)
		}
		if n < MinMemoryLimit {
			return fault.New(fault.ErrInvalid, "%s: memory_limit %s: at least %s", where, e.MemoryLimitText, FormatSize(MinMemoryLimit))
		}
		e.MemoryLimit, e.MemoryLimitText = n, FormatSize(n)
	}
	if e.Isolate != "" && e.Isolate != IsolateNet {
		return fault.New(fault.ErrInvalid, "%s: isolate %q: want net", where, e.Isolate)
	}
	e.PingTimeout = PingTimeout
	if e.PingTimeoutText != "" {
		d, err := time.ParseDuration(e.PingTimeoutText)
		if err != nil || d <= 0 {
			return fault.New(fault.ErrInvalid, "%s: ping_timeout %q: not a positive duration like 2s", where, e.PingTimeoutText)
		}
		e.PingTimeout, e.PingTimeoutText = d, d.String()
	}
	if e.Weight == 0 {
		e.Weight = 1
	}
	if e.Weight < 1 || e.Weight > MaxWeight {
		return fault.New(fault.ErrInvalid, "%s: weight %d: want 1–%d", where, e.Weight, MaxWeight)
	}
	switch e.Mode {
	case "":
		e.Mode = ModeEnvelope
	case ModeEnvelope, ModePlain:
	default:
		return fault.New(fault.ErrInvalid, "%s: mode %q: want envelope or plain", where, e.Mode)
	}
	switch e.Status {
	case "":
		e.Status = StatusActive
	case StatusActive, StatusInactive:
	default:
		return fault.New(fault.ErrInvalid, "%s: status %q: want active or inactive", where, e.Status)
	}
	if e.Args == nil {
		e.Args = []string{}
	}
	if e.Env == nil {
		e.Env = []string{}
	}
	for _, n := range e.Env {
		if !validEnvName(n) {
			return fault.New(fault.ErrInvalid, "%s: env %q: not a variable name", where, n)
		}
	}
	caps, err := checkCapabilities(e.Capabilities)
	if err != nil {
		return fault.New(fault.ErrInvalid, "%s: %v", where, err)
	}
	e.Capabilities = caps
	return nil
}

func validEnvName(n string) bool {
	if n == "" {
		return false
	}
	for i, r := range n {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Concurrency is memvault.toml's [delegate] concurrency, checked;
// DefaultConcurrency when it is not set.
func Concurrency(v *vault.Vault) (int, error) {
	n := v.Config.Delegate.Concurrency
	if n == 0 {
		return DefaultConcurrency, nil
	}
	if err := CheckConcurrency(n); err != nil {
		return 0, fault.New(fault.ErrInvalid, "%s: [delegate] concurrency %d: want %d–%d", vault.ConfigFile, n, MinConcurrency, MaxConcurrency)
	}
	return n, nil
}

// Parse reads the executors of a memvault.toml text, sorted by name.
func Parse(data []byte) ([]Entry, error) {
	c, err := vault.DecodeConfig(data)
	if err != nil {
		return nil, err
	}
	return entries(&c)
}

// List returns the vault's executors, sorted by name.
func List(v *vault.Vault) ([]Entry, error) { return entries(&v.Config) }

// entries are the executors of c, checked, sorted by name.
func entries(c *vault.Config) ([]Entry, error) {
	out := make([]Entry, 0, len(c.Executors))
	for name, t := range c.Executors {
		e := entryOf(name, t)
		if err := e.check(); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Lookup returns the executor name of the vault.
func Lookup(v *vault.Vault, name string) (Entry, error) {
	es, err := List(v)
	if err != nil {
		return Entry{}, err
	}
	for _, e := range es {
		if e.Name == name {
			return e, nil
		}
	}
	return Entry{}, fault.New(fault.ErrNotFound, "executor %s: not registered", name).
		WithHint("memvault executor list shows the registered ones; memvault executor add registers one")
}

// Pick chooses the executor of a delegation: name when given, else the
// only active one, else the first active one by name.
func Pick(v *vault.Vault, name string) (Entry, error) {
	if name != "" {
		e, err := Lookup(v, name)
		if err == nil && e.Status != StatusActive {
			err = fault.New(fault.ErrConflict, "executor %s: inactive: %s", name, e.Reason).
				WithHint("memvault executor ping %s checks it again", name)
		}
		return e, err
	}
	es, err := List(v)
	if err != nil {
		return Entry{}, err
	}
	for _, e := range es {
		if e.Status == StatusActive {
			return e, nil
		}
	}
	return Entry{}, fault.New(fault.ErrNotFound, "executor: none active").
		WithHint("memvault executor add NAME -- COMMAND registers one")
}

// Active returns the vault's active executors, sorted by name; an error
// when there is none.
func Active(v *vault.Vault) ([]Entry, error) {
	es, err := List(v)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, e := range es {
		if e.Status == StatusActive {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, fault.New(fault.ErrNotFound, "executor: none active").
			WithHint("memvault executor add NAME -- COMMAND registers one")
	}
	return out, nil
}

// AddTo returns data (memvault.toml) with the table of e appended.
func AddTo(data []byte, e Entry) ([]byte, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	for _, n := range e.Env {
		if LooksSecret(n) {
			return nil, fault.New(fault.ErrInvalid, "executor %s: env %s: its name suggests a credential, which is never passed to an executor", e.Name, n)
		}
	}
	t, err := configedit.NewTOML(data)
	if err != nil {
		return nil, fault.New(fault.ErrInvalid, "%s: %v", vault.ConfigFile, err)
	}
	if t.Value("executors", e.Name) != nil {
		return nil, fault.New(fault.ErrConflict, "executor %s: already registered", e.Name).
			WithHint("memvault executor remove %s first", e.Name)
	}
	args, env := e.Args, e.Env
	if args == nil {
		args = []string{}
	}
	if env == nil {
		env = []string{}
	}
	ping := e.Ping
	if ping == nil {
		ping = []string{}
	}
	fields := configedit.Obj{
		{Key: "command", Value: e.Command},
		{Key: "args", Value: args},
		{Key: "timeout", Value: e.TimeoutText},
		{Key: "weight", Value: e.Weight},
		{Key: "env", Value: env},
		{Key: "ping", Value: ping},
	}
	if e.PingTimeoutText != "" {
		fields = append(fields, configedit.Field{Key: "ping_timeout", Value: e.PingTimeoutText})
	}
	if e.MemoryLimitText != "" {
		fields = append(fields, configedit.Field{Key: "memory_limit", Value: e.MemoryLimitText})
	}
	if e.Isolate != "" {
		fields = append(fields, configedit.Field{Key: "isolate", Value: e.Isolate})
	}
	fields = append(fields, configedit.Obj{
		{Key: "capabilities", Value: e.Caps()},
		{Key: "mode", Value: e.Mode},
		{Key: "status", Value: e.Status},
		{Key: "reason", Value: e.Reason},
	}...)
	if err := t.AppendTable([]string{"executors", e.Name}, fields); err != nil {
		return nil, fault.New(fault.ErrInvalid, "%s: %v", vault.ConfigFile, err)
	}
	return finish(t)
}

// RemoveFrom returns data with the table of the executor name taken out.
func RemoveFrom(data []byte, name string) ([]byte, error) {
	t, err := configedit.NewTOML(data)
	if err != nil {
		return nil, fault.New(fault.ErrInvalid, "%s: %v", vault.ConfigFile, err)
	}
	if t.Value("executors", name) == nil {
		return nil, fault.New(fault.ErrNotFound, "executor %s: not registered", name)
	}
	if err := t.DeleteTable([]string{"executors", name}); err != nil {
		return nil, fault.New(fault.ErrInvalid, "%s: %v", vault.ConfigFile, err)
	}
	return finish(t)
}

// SetStatus returns data with the status and reason of the executor name
// replaced in place.
func SetStatus(data []byte, name, status, reason string) ([]byte, error) {
	t, err := configedit.NewTOML(data)
	if err != nil {
		return nil, fault.New(fault.ErrInvalid, "%s: %v", vault.ConfigFile, err)
	}
	if t.Value("executors", name) == nil {
		return nil, fault.New(fault.ErrNotFound, "executor %s: not registered", name)
	}
	for _, kv := range [][2]string{{"status", status}, {"reason", reason}} {
		if err := t.SetString([]string{"executors", name, kv[0]}, kv[1]); err != nil {
			return nil, fault.New(fault.ErrInvalid, "%s: [executors.%s]: %v (write %s = \"\" on a line of its own)", vault.ConfigFile, name, err, kv[0])
		}
	}
	return finish(t)
}

// SetCapabilities returns data with the capabilities of the executor name
// replaced in place (a `capabilities = [ … ]` its table must hold).
func SetCapabilities(data []byte, name string, caps []string) ([]byte, error) {
	caps, err := checkCapabilities(caps)
	if err != nil {
		return nil, err
	}
	t, err := configedit.NewTOML(data)
	if err != nil {
		return nil, fault.New(fault.ErrInvalid, "%s: %v", vault.ConfigFile, err)
	}
	if t.Value("executors", name) == nil {
		return nil, fault.New(fault.ErrNotFound, "executor %s: not registered", name)
	}
	if err := t.SetStrings([]string{"executors", name, "capabilities"}, caps); err != nil {
		return nil, fault.New(fault.ErrInvalid, "%s: [executors.%s]: %v (write capabilities = [] in it)", vault.ConfigFile, name, err)
	}
	return finish(t)
}

func finish(t *configedit.TOML) ([]byte, error) {
	out, err := t.Bytes()
	if err != nil {
		return nil, fault.New(fault.ErrInvalid, "%s: %v", vault.ConfigFile, err)
	}
	return out, nil
}

// Edit changes memvault.toml in tx, with subject as the commit's: edit
// gets the file as it is under the lock and returns what to write; the
// write is made only if the file still holds what was read.
func Edit(tx *vault.Tx, subject string, edit func(data []byte) ([]byte, error)) error {
	v := tx.Vault()
	rel := vault.MustRel(vault.ConfigFile)
	old, err := v.Files().ReadFile(v.Abs(rel))
	existed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fault.IO("read "+vault.ConfigFile, err)
	}
	data, err := edit(old)
	if err != nil {
		return err
	}
	if string(data) != string(old) {
		// The file is the person's, and a secret in it is theirs to
		// move: memvault refuses to commit it rather than rewrite their
		// file (docs/EXECUTORS.md, "Secrets in memvault.toml").
		if _, counts := v.Redact(string(data)); len(counts) > 0 {
			e := fault.New(fault.ErrInvalid, "%s: holds a credential (%s); memvault never commits one", vault.ConfigFile, strings.Join(slices.Sorted(maps.Keys(counts)), ", "))
			return e.WithHint("move it out of the file (an executor reads it from the environment: executor add --env NAME), then run the command again")
		}
		tx.WriteFileIfUnchanged(rel, data, old, existed)
		tx.Subject(subject)
	}
	return nil
}
