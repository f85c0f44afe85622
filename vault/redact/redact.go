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
	"sync"
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
	// needles and folded, if either is set, say where the pattern can
	// match at all: text holding none of needles (as written) and none of
	// folded (lower case, looked for in the text's ASCII lower case) is left
	// alone without compiling the pattern. Every match of the pattern
	// contains one of them, so they save only work, never a secret
	// (TestNeedlesNecessary).
	needles, folded []string
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

// The kinds of the default rules.
const (
	KindAWSAccessKey     = "aws-access-key"
	KindAPIKey           = "api-key"
	KindGitHubToken      = "github-token"
	KindSlackToken       = "slack-token"
	KindPrivateKey       = "private-key"
	KindBearerToken      = "bearer-token"
	KindSecretAssignment = "secret-assignment"
	KindJWT              = "jwt"
	KindURLCredentials   = "url-credentials"
	KindAWSSecretKey     = "aws-secret-key"
	KindCLIPassword      = "cli-password"
	KindCookie           = "cookie"
	KindBasicAuth        = "basic-auth"
	KindCloudKey         = "cloud-key"
	KindServiceToken     = "service-token"
	KindWebhookURL       = "webhook-url"
)

// The default patterns. Token shapes are anchored on word boundaries and a
// minimum length so a word like "sk-ip" or "risk-free" never matches.
var defaultRules = []rule{
	{Kind: KindPrivateKey, pattern: lazyRegexp(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)`), needles: []string{"-----BEGIN "}},
	{Kind: KindAWSAccessKey, pattern: lazyRegexp(`\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b`), needles: []string{"AKIA", "ASIA", "ABIA", "ACCA"}},
	// A JSON Web Token: three base64url parts, the first two JSON objects
	// ("eyJ" is `{"` encoded), bare or in a cookie or header.
	{Kind: KindJWT, pattern: lazyRegexp(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), needles: []string{"eyJ"}},
	// The password of a URL: scheme://user:PASSWORD@host, user optional
	// (redis://:PASSWORD@host).
	{Kind: KindURLCredentials, pattern: lazyRegexp(`(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s/:@]*:(?P<secret>[^\s/@]+)@`), accept: notPlaceholder, needles: []string{"://"}},
	// An AWS secret access key: 40 base64 characters on a line that names
	// AWS; the shape alone is too common (hashes, paths) to go by.
	{Kind: KindAWSSecretKey, pattern: lazyRegexp(`(?i)\baws\b[^\n]{0,80}?(?:^|[^A-Za-z0-9/+])(?P<secret>[A-Za-z0-9/+]{40})(?:$|[^A-Za-z0-9/+=])`), accept: mixedKey, folded: []string{"aws"}},
	// A password on a database client's command line: mysql -pPASSWORD,
	// mysqldump -pPASSWORD (psql takes none; PGPASSWORD=… is an assignment).
	{Kind: KindCLIPassword, pattern: lazyRegexp(`\bmysql(?:dump|admin|import|sh)?\b[^\n]*?\s-p(?P<secret>[^\s'"-][^\s'"]{2,})`), accept: notPlaceholder, needles: []string{"mysql"}},
	{Kind: KindGitHubToken, pattern: lazyRegexp(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`), needles: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	{Kind: KindSlackToken, pattern: lazyRegexp(`\bxox[abpr]-[A-Za-z0-9-]{10,}`), needles: []string{"xox"}},
	{Kind: KindAPIKey, pattern: lazyRegexp(`\bsk-[A-Za-z0-9_-]{20,}`), accept: hasDigit, needles: []string{"sk-"}},
	{Kind: KindBearerToken, pattern: lazyRegexp(`(?i)(?:\bauthorization["']?\s*[:=]\s*["']?bearer\s+|\bbearer\s+)(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)`), accept: tokenLike, folded: []string{"bearer"}},
	// The values of a Cookie or Set-Cookie header (or curl's --cookie),
	// those that look like a credential: "Path=/" and "Max-Age=3600" stay.
	{Kind: KindCookie, pattern: lazyRegexp(`(?i)(?:\b(?:set-)?cookie["']?\s*:|--cookie[\s=]|\bcurl\b[^\n]*?\s-b)\s*["']?(?P<secret>[^\s"'=;]+=[^\s;"']*(?:;\s*[^\s"'=;]+(?:=[^\s;"']*)?)*)`), rewrite: cookieValues, folded: []string{"cookie", "curl"}},
	// HTTP basic authentication: the header's base64 credentials, and the
	// password of curl -u user:PASSWORD.
	{Kind: KindBasicAuth, pattern: lazyRegexp(`(?i)(?:\bauthorization["']?\s*[:=]\s*["']?basic\s+|\bcurl\b[^\n]*?\s(?:-u|--user)[\s=]+["']?[^\s:'"]+:)(?P<secret>[^\s"']{4,})`), accept: notPlaceholder, folded: []string{"basic", "curl"}},
	// Cloud providers' keys of a known shape: a Google API key, a Google
	// OAuth access token, a DigitalOcean token, and the account or shared
	// access key of an Azure connection string.
	{Kind: KindCloudKey, pattern: lazyRegexp(`\bAIza[0-9A-Za-z_-]{35}\b|\bya29\.[0-9A-Za-z_-]{20,}|\bdo[por]_v1_[a-f0-9]{64}\b|\b(?i:AccountKey|SharedAccessKey|SharedAccessSignature)=(?P<secret>[A-Za-z0-9+/%=&:.-]{20,})`), needles: []string{"AIza", "ya29.", "_v1_"}, folded: []string{"accountkey", "sharedaccess"}},
	// Services' tokens, each with its own prefix: Stripe, GitLab, npm,
	// PyPI, SendGrid, Twilio, Hugging Face, Docker Hub, Shopify.
	{Kind: KindServiceToken, pattern: lazyRegexp(`\b(?:(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{20,}|glpat-[0-9A-Za-z_-]{20,}|gl(?:ptt|rt|dt|cbt)-[0-9A-Za-z_-]{20,}|npm_[A-Za-z0-9]{36}|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,}|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}|SK[0-9a-f]{32}|hf_[A-Za-z0-9]{34,}|dckr_pat_[A-Za-z0-9_-]{20,}|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})\b`), needles: []string{"_live_", "_test_", "glpat-", "glptt-", "glrt-", "gldt-", "glcbt-", "npm_", "pypi-", "SG.", "SK", "hf_", "dckr_pat_", "shp"}},
	// The secret part of a Slack or Discord webhook address: whoever has it
	// can post.
	{Kind: KindWebhookURL, pattern: lazyRegexp(`\bhttps://(?:hooks\.slack\.com/(?:services|workflows)/|(?:[a-z]+\.)?discord(?:app)?\.com/api/webhooks/)(?P<secret>[A-Za-z0-9/_-]{20,})`), needles: []string{"hooks.slack.com/", "discord"}},
	{Kind: KindSecretAssignment, pattern: lazyRegexp(`(?i)\b[a-z0-9_.-]*(?:password|passwd|passphrase|secret|api[_-]?key|apikey|access[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret|private[_-]?key|token)["']?\s*(?:=|:)\s*["']?(?P<secret>[^\s"'<>,;)\]}]{4,})`), accept: secretLike, folded: []string{"passw", "passphrase", "secret", "api", "access", "private", "token"}},
}

// lazyRegexp compiles src the first time it is needed.
func lazyRegexp(src string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(src) })
}

// DefaultRules returns a fresh copy of the default rule set.
func DefaultRules() *Rules {
	return &Rules{rules: slices.Clone(defaultRules)}
}

// DefaultKinds lists the kinds of the default rules.
func DefaultKinds() []string {
	kinds := make([]string, 0, len(defaultRules))
	for _, r := range defaultRules {
		kinds = append(kinds, r.Kind)
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
		kinds = append(kinds, r.Kind)
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
	lower := "" // text's ASCII lower case, made when a rule first needs it
	for _, r := range rs.rules {
		if !r.mayMatch(text, &lower) {
			continue
		}
		if out := r.apply(text, counts); out != text {
			text, lower = out, ""
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
	re := r.pattern()
	locs := re.FindAllStringSubmatchIndex(text, -1)
	if locs == nil {
		return text
	}
	group := re.SubexpIndex("secret")
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		start, end := loc[0], loc[1]
		if group > 0 && loc[2*group] >= 0 {
			start, end = loc[2*group], loc[2*group+1]
		}
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
