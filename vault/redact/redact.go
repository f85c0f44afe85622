// Package redact replaces credentials in text before it reaches the vault:
// a transcript message, a hook payload, a ledger event. It is a leaf: the
// transcript parsers and the vault both call it, so it imports neither.
//
// Credentials of well-known shapes are replaced by "[REDACTED:<kind>]"; see
// DefaultRules, and Config for what memvault.toml can change.
package redact

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// rule is one redaction rule: text matching its pattern is replaced by
// "[REDACTED:<Kind>]". If the pattern has a group named "secret", only that
// group is replaced, so "password=hunter2" keeps its key and reads
// "password=[REDACTED:secret-assignment]".
type rule struct {
	Kind string
	// pattern is compiled on first use: the default patterns take over a
	// millisecond to compile, which a command that never redacts (a recall,
	// a render) should not pay at start.
	pattern func() *regexp.Regexp
	// accept, if set, vetoes a match; it keeps rules that need a look at the
	// matched value (which RE2 cannot express) from firing on prose.
	accept func(secret string) bool
	// rewrite, if set, replaces the match itself instead of the whole of it
	// becoming one marker: it returns the new text and how many secrets it
	// replaced (0 leaves the match as it was). A cookie header holds several
	// values, and only the credential-like ones go.
	rewrite func(secret, marker string) (string, int)
	// scan, if set, stands for pattern: it returns the [start, end) spans
	// of the secrets in text, in order, for a rule that RE2 cannot say
	// (the entropy of a token) or that would cost a pattern too much.
	scan func(text string) [][2]int
	// needles and folded, if either is set, say where the pattern can
	// match at all: text holding none of needles (as written) and none of
	// folded (lower case, looked for in the text's ASCII lower case) is left
	// alone without compiling the pattern. Every match of the pattern
	// contains one of them, so they save only work, never a secret
	// (TestNeedlesNecessary).
	needles, folded []string
	// mask is the bits of the needles in the index of needles.go: set for
	// the default rules, nil for one added by a Config.
	mask *needleSet
}

// Rules is an ordered set of redaction rules. The zero value redacts
// nothing; DefaultRules is what the vault uses unless configured otherwise.
type Rules struct {
	rules []rule
}

// Config is the user-facing configuration of redaction, as it appears in
// memvault.toml.
type Config struct {
	// Disable lists default rule kinds to turn off.
	Disable []string `toml:"disable" json:"disable,omitempty"`
	// Extra maps a kind to an extra regular expression (RE2 syntax). A group
	// named "secret" limits the replacement to that group.
	Extra map[string]string `toml:"extra" json:"extra,omitempty"`
}

// DefaultRules returns a fresh copy of the default rule set.
func DefaultRules() *Rules {
	return &Rules{rules: slices.Clone(defaultRules)}
}

// DefaultKinds lists the kinds of the default rules.
func DefaultKinds() []string {
	kinds := make([]string, 0, len(defaultRules))
	for _, r := range defaultRules {
		if !slices.Contains(kinds, r.Kind) {
			kinds = append(kinds, r.Kind) // a kind may have several rules
		}
	}
	return kinds
}

// NewRules builds the rule set a Config describes: the defaults less
// the disabled kinds, plus the extra patterns in kind order.
func NewRules(cfg Config) (*Rules, error) {
	rs := DefaultRules()
	for _, k := range cfg.Disable {
		if !slices.Contains(DefaultKinds(), k) {
			return nil, fmt.Errorf("redact: unknown rule kind %q (want one of %s)", k, strings.Join(DefaultKinds(), ", "))
		}
	}
	rs.Disable(cfg.Disable...)
	kinds := make([]string, 0, len(cfg.Extra))
	for k := range cfg.Extra {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		if err := rs.Add(k, cfg.Extra[k]); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// Disable removes the rules of the given kinds.
func (rs *Rules) Disable(kinds ...string) {
	rs.rules = slices.DeleteFunc(rs.rules, func(r rule) bool { return slices.Contains(kinds, r.Kind) })
}

// Add appends a rule for kind matching pattern (RE2 syntax).
func (rs *Rules) Add(kind, pattern string) error {
	if kind == "" || strings.ContainsAny(kind, "[]:\n") {
		return fmt.Errorf("redact: bad rule kind %q", kind)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return fmt.Errorf("redact: rule %s: %w", kind, err)
	}
	if re.MatchString("") {
		return fmt.Errorf("redact: rule %s: pattern matches the empty string", kind)
	}
	rs.rules = append(rs.rules, rule{Kind: kind, pattern: func() *regexp.Regexp { return re }})
	return nil
}

// Kinds lists the kinds of the rules in order.
func (rs *Rules) Kinds() []string {
	var kinds []string
	for _, r := range rs.rules {
		if !slices.Contains(kinds, r.Kind) {
			kinds = append(kinds, r.Kind)
		}
	}
	return kinds
}

// Text replaces every match of rules in text by "[REDACTED:<kind>]" and
// returns the new text and the number of replacements per kind. Rules apply
// in order, each to the output of the previous one, so a PEM block is gone
// before the assignment rule looks at it. A nil rules redacts nothing.
func Text(text string, rules *Rules) (string, map[string]int) {
	counts := map[string]int{}
	return rules.apply(text, counts), counts
}

// apply redacts text and adds what it replaced to counts.
func (rs *Rules) apply(text string, counts map[string]int) string {
	if rs == nil || text == "" {
		return text
	}
	// Which needles the text holds, found in one pass for all rules
	// (needles.go), and again only after a rule changed the text.
	found := needlesIn(text)
	for _, r := range rs.rules {
		if !r.mayMatchFound(text, found) {
			continue
		}
		if out := r.apply(text, counts); out != text {
			text = out
			found = needlesIn(text)
		}
	}
	return text
}

// mayMatch reports whether r's pattern can match text: false only when
// text holds none of the rule's needles. lower caches text's ASCII lower
// case for the folded needles ("" until one is looked for).
func (r rule) mayMatch(text string, lower *string) bool {
	if r.needles == nil && r.folded == nil {
		return true
	}
	for _, n := range r.needles {
		if strings.Contains(text, n) {
			return true
		}
	}
	if r.folded == nil {
		return false
	}
	// A case-insensitive pattern matches two letters outside ASCII for
	// ASCII ones: the long s (U+017F) for s and the Kelvin sign (U+212A)
	// for k. Text with either goes to the pattern.
	if strings.Contains(text, "\u017f") || strings.Contains(text, "\u212a") {
		return true
	}
	if *lower == "" {
		*lower = asciiLower(text)
	}
	for _, n := range r.folded {
		if strings.Contains(*lower, n) {
			return true
		}
	}
	return false
}

// asciiLower maps A-Z to a-z and keeps every other byte, so that offsets
// and non-ASCII text stay as they were.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func (r rule) apply(text string, counts map[string]int) string {
	spans := r.find(text)
	if spans == nil {
		return text
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		start, end := sp[0], sp[1]
		secret := text[start:end]
		if strings.HasPrefix(secret, "[REDACTED:") || (r.accept != nil && !r.accept(secret)) {
			continue
		}
		marker := "[REDACTED:" + r.Kind + "]"
		if r.rewrite != nil {
			out, n := r.rewrite(secret, marker)
			if n == 0 {
				continue
			}
			marker = out
			counts[r.Kind] += n - 1
		}
		b.WriteString(text[last:start])
		b.WriteString(marker)
		last = end
		counts[r.Kind]++
	}
	b.WriteString(text[last:])
	return b.String()
}

// find returns the spans of r's secrets in text: the scan's, or each
// match of the pattern, narrowed to the first group named "secret" that
// took part in it (several alternatives may each name their secret).
func (r rule) find(text string) [][2]int {
	if r.scan != nil {
		return r.scan(text)
	}
	re := r.pattern()
	locs := re.FindAllStringSubmatchIndex(text, -1)
	if locs == nil {
		return nil
	}
	var groups []int
	for i, name := range re.SubexpNames() {
		if name == "secret" {
			groups = append(groups, i)
		}
	}
	spans := make([][2]int, 0, len(locs))
	for _, loc := range locs {
		sp := [2]int{loc[0], loc[1]}
		for _, g := range groups {
			if loc[2*g] >= 0 {
				sp = [2]int{loc[2*g], loc[2*g+1]}
				break
			}
		}
		spans = append(spans, sp)
	}
	return spans
}

// cookieValues replaces the credential-like values of a cookie header's
// "name=value; name=value" pairs by marker. A cookie's attributes (Path,
// Domain, Expires, …) and short or plain values are kept.
func cookieValues(header, marker string) (string, int) {
	pairs := strings.Split(header, ";")
	n := 0
	for i, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "path", "domain", "expires", "max-age", "samesite", "priority", "version", "comment":
			continue
		}
		v := strings.TrimSpace(value)
		if strings.HasPrefix(v, "[REDACTED:") || strings.ContainsAny(v, " ,") || !notPlaceholder(v) || len(v) < 8 || !(len(v) >= 16 || hasDigit(v)) {
			continue
		}
		pairs[i] = name + "=" + strings.Replace(value, v, marker, 1)
		n++
	}
	return strings.Join(pairs, ";"), n
}

// notPlaceholder refuses a value that is a variable, a template or a mask
// rather than a password ($PW, {{pw}}, <password>, ****).
func notPlaceholder(s string) bool {
	s = strings.TrimRight(s, "`.,;:)")
	if strings.HasPrefix(s, "$") || strings.HasPrefix(s, "{{") || strings.HasPrefix(s, "<") || strings.HasPrefix(s, "%") {
		return false
	}
	if strings.Trim(s, "*xX.") == "" {
		return false
	}
	// A word in capitals (PASSWORD, MY_PW) is documentation's stand-in for
	// a value, as are the words themselves.
	if strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
		return false
	}
	switch strings.ToLower(s) {
	case "password", "passwd", "pass", "pw", "pwd", "secret", "token":
		return false
	}
	return true
}

// mixedKey accepts a 40-character value that mixes upper and lower case
// letters and digits, as a random base64 key does; a word, a path or a hex
// digest (a commit hash) does not.
func mixedKey(s string) bool {
	return hasDigit(s) && strings.ContainsFunc(s, unicode.IsUpper) && strings.ContainsFunc(s, unicode.IsLower)
}

func hasDigit(s string) bool {
	return strings.ContainsFunc(s, unicode.IsDigit)
}

// isIdentifier reports whether s is a short lower-case kebab or snake case
// name: words of letters joined by '-' or '_'.
func isIdentifier(s string) bool {
	if len(s) > 24 || !strings.ContainsAny(s, "-_") {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// tokenLike accepts a bearer token: long enough and not a plain word, so
// "bearer of bad news" is left alone.
func tokenLike(s string) bool {
	return len(s) >= 16 || hasDigit(s)
}

// secretLike accepts an assigned value that looks like a credential rather
// than prose: "password: required", "Secret: Friday" and "max_token: 4096"
// stay, "password=hunter2" and "api_key: 9f8e7d6c" go. A value of letters
// only counts if it mixes case inside the word or is long (12+); short
// numbers, masks and placeholders ($VAR, {{x}}, <x>) are left alone.
func secretLike(s string) bool {
	if strings.HasPrefix(s, "$") || strings.HasPrefix(s, "{{") || strings.HasPrefix(s, "%") || strings.HasPrefix(s, "<") {
		return false // a variable or template, not a value
	}
	if strings.HasPrefix(s, "&") || strings.HasPrefix(s, "*") || strings.ContainsAny(s, "([") {
		return false // code: token = &tok, token = next(r), token = toks[i]
	}
	if isIdentifier(s) {
		return false // a name in code or config: "api-key", "slack_token"
	}
	switch strings.ToLower(strings.TrimRight(s, ".,!?")) {
	case "true", "false", "null", "none", "nil", "required", "optional", "string", "undefined", "redacted", "xxxx", "xxxxxxxx", "****", "********":
		return false
	}
	var lower, innerUpper, digit, other bool
	digits := 0
	for i, c := range s {
		switch {
		case unicode.IsLower(c):
			lower = true
		case unicode.IsUpper(c):
			innerUpper = innerUpper || i > 0
		case unicode.IsDigit(c):
			digit = true
			digits++
		default:
			other = true
		}
	}
	if digits == len(s) && len(s) < 8 {
		return false // "max_token: 4096" is a setting, not a secret
	}
	if strings.Trim(s, ".…-_*") == "" {
		return false // an ellipsis or a mask
	}
	if digit || other || (innerUpper && lower) {
		return true
	}
	return len(s) >= 12
}

// JSON redacts every string inside a JSON value, keys included, keeping it
// valid JSON, so a tool call's input stays parseable. A value that fails to
// parse is redacted as text and kept as a JSON string.
func JSON(v json.RawMessage, rules *Rules) (json.RawMessage, map[string]int) {
	counts := map[string]int{}
	var x any
	if json.Unmarshal(v, &x) != nil {
		out, _ := json.Marshal(rules.apply(string(v), counts))
		return out, counts
	}
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case string:
			return rules.apply(t, counts)
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		case map[string]any:
			// Keys too: a tool's input may key a map by a credential
			// ({"env": {"AKIA…": "x"}}). Two keys that redact alike keep
			// both values, the second under a numbered key.
			out := make(map[string]any, len(t))
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				nk := rules.apply(k, counts)
				for n := 2; nk != k; n++ {
					if _, taken := out[nk]; !taken {
						break
					}
					nk = fmt.Sprintf("%s#%d", rules.apply(k, map[string]int{}), n)
				}
				out[nk] = walk(t[k])
			}
			return out
		}
		return x
	}
	x = walk(x)
	if len(counts) == 0 {
		return v, counts // untouched: keep the source's bytes and key order
	}
	out, err := json.Marshal(x)
	if err != nil {
		return v, counts
	}
	return out, counts
}
