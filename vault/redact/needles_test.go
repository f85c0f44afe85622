package redact

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// withoutNeedles is rs with every rule's needles dropped: each pattern
// runs on every text, as before the needles existed.
func withoutNeedles(rs *Rules) *Rules {
	out := &Rules{}
	for _, r := range rs.rules {
		r.needles, r.folded = nil, nil
		out.rules = append(out.rules, r)
	}
	return out
}

// needleTexts are the corpus samples, each also upper-cased, lower-cased
// and with s and k written as the two letters outside ASCII that a
// case-insensitive pattern takes for them, and random strings of the
// fragments the patterns are made of.
func needleTexts(t *testing.T) []string {
	var texts []string
	for _, f := range []string{"testdata/secrets.txt", "testdata/prose.txt"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range strings.Split(string(data), "\n= ") {
			texts = append(texts, s, strings.ToUpper(s), strings.ToLower(s),
				strings.NewReplacer("s", "\u017f", "k", "\u212a").Replace(s),
				strings.NewReplacer("S", "\u017f", "K", "\u212a").Replace(s))
		}
	}
	frags := []string{
		"AKIA", "ASIA", "aws", "AWS", "aw\u017f", "eyJ", "://", "user:", "@", "mysql", " -p", "ghp_", "github_pat_",
		"xoxb-", "sk-", "SK", "sk_live_", "glpat-", "npm_", "hf_", "SG.", "shpat_", "dckr_pat_", "pypi-AgEIcHlwaS5vcmc",
		"Bearer ", "bearer ", "authorization: ", "Authorization=", "basic ", "BASIC ", "cookie: ", "Set-Cookie:",
		"--cookie ", "curl ", " -b ", " -u ", "--user=", "AIza", "ya29.", "dop_v1_", "AccountKey=", "SharedAccessSignature=",
		"https://", "hooks.slack.com/services/", "discord.com/api/webhooks/", "password", "PASSWD", "pa\u017f\u017fword",
		"\u212aey", "api_key", "ApiKey", "access-token", "auth_token", "client_secret", "private_key", "TOKEN",
		"-----BEGIN ", "RSA ", "PRIVATE KEY-----", "-----END ", "[REDACTED:", "]", "=", ": ", "\"", "'", " ", "\n", ";",
		"abcdefgh", "ABCDEFGHIJKLMNOP", "0123456789abcdef", "0123456789abcdef0123456789abcdef", "Zz9/+Zz9/+Zz9/+Zz9/+",
		"tok3nvalue", "é", "\u017f", "\u212a",
	}
	// One text for each alternative of each default pattern, so that a
	// needle left out of a rule fails here, not only by the luck of the
	// random texts.
	x := func(c string, n int) string { return strings.Repeat(c, n) }
	for _, s := range branchTexts(x) {
		matched := false
		for _, r := range DefaultRules().rules {
			matched = matched || r.pattern != nil && r.pattern().MatchString(s)
		}
		if !matched {
			t.Fatalf("no default pattern matches the branch text %q", s)
		}
		texts = append(texts, s, strings.ToUpper(s), strings.ToLower(s),
			strings.NewReplacer("s", "\u017f", "k", "\u212a").Replace(s))
	}
	r := rand.New(rand.NewPCG(22, 7))
	for i := 0; i < 1500; i++ {
		var b strings.Builder
		for n := 1 + r.IntN(14); n > 0; n-- {
			b.WriteString(frags[r.IntN(len(frags))])
		}
		texts = append(texts, b.String())
	}
	return texts
}

// TestNeedlesNecessary holds the rules' needles to their promise: every
// match of a default pattern holds one of its rule's needles (so the
// needle check never skips a pattern that would have matched), and
// redaction with the needles gives exactly what it gives without them.
func TestNeedlesNecessary(t *testing.T) {
	rules, plain := DefaultRules(), withoutNeedles(DefaultRules())
	skipped := 0
	for _, text := range needleTexts(t) {
		for _, r := range rules.rules {
			if r.scan != nil {
				continue // a scan has no needles: it looks for itself
			}
			lower := ""
			may := r.mayMatch(text, &lower)
			if !may {
				skipped++
			}
			for _, loc := range r.pattern().FindAllStringIndex(text, -1) {
				match := text[loc[0]:loc[1]]
				lm := ""
				if !may || !r.mayMatch(match, &lm) {
					t.Fatalf("rule %s matches %q in %q, but its needles say it cannot", r.Kind, match, text)
				}
			}
		}
		got, gc := Text(text, rules)
		want, wc := Text(text, plain)
		if got != want || len(gc) != len(wc) {
			t.Fatalf("with needles %q gives %q %v, without %q %v", text, got, gc, want, wc)
		}
		for k, n := range wc {
			if gc[k] != n {
				t.Fatalf("with needles %q counts %v, without %v", text, gc, wc)
			}
		}
	}
	if skipped == 0 {
		t.Fatal("no rule was ever skipped: the needles do nothing")
	}
}

// branchTexts are credentials of every shape the default patterns name,
// one per alternative; x(c, n) repeats c n times.
func branchTexts(x func(string, int) string) []string {
	texts := []string{
		"-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----",
		"eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.abcdefgh12", "redis://:s3cretpw9@host", "https://u:pa55word9@example.com/",
		"AWS secret " + x("Zz9/+", 7) + "aB1cD end", "mysqldump -u root -ps3cretpw9 db",
		"github_pat_" + x("a1", 11), "sk-" + x("a1", 10),
		"Authorization: Bearer abcdefgh12345678", "use bearer abcdefgh12345678",
		"Cookie: session=abcdef1234567890", "Set-Cookie: sid=abcdef1234567890; Path=/", "--cookie sid=abcdef1234567890",
		"curl https://x -b sid=abcdef1234567890", "Authorization: Basic dXNlcjpwYXNzd29yZDE=", "curl -u user:pa55word1 https://x",
		"curl --user=user:pa55word1 https://x",
		"AIza" + x("a", 35), "ya29." + x("a1", 10), "dop_v1_" + x("a1", 32), "doo_v1_" + x("a1", 32), "dor_v1_" + x("a1", 32),
		"AccountKey=" + x("a1", 10), "SharedAccessKey=" + x("a1", 10), "SharedAccessSignature=" + x("a1", 10),
		"sk_live_" + x("a1", 10), "rk_test_" + x("a1", 10), "glpat-" + x("a1", 10), "glptt-" + x("a1", 10), "glrt-" + x("a1", 10),
		"gldt-" + x("a1", 10), "glcbt-" + x("a1", 10), "npm_" + x("a1", 18), "pypi-AgEIcHlwaS5vcmc" + x("a1", 20),
		"SG." + x("a", 22) + "." + x("b", 43), "SK" + x("0a", 16), "hf_" + x("a1", 17), "dckr_pat_" + x("a1", 10),
		"https://hooks.slack.com/services/T000/B000/" + x("X", 24), "https://hooks.slack.com/workflows/" + x("X", 24),
		"https://discord.com/api/webhooks/123/" + x("a", 24), "https://discordapp.com/api/webhooks/123/" + x("a", 24),
		"https://ptb.discord.com/api/webhooks/123/" + x("a", 24),
	}
	for _, p := range []string{"AKIA", "ASIA", "ABIA", "ACCA"} {
		texts = append(texts, p+"IOSFODNN7EXAMPLE")
	}
	for _, p := range []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"} {
		texts = append(texts, p+x("a1", 18))
	}
	for _, p := range []string{"xoxa-", "xoxb-", "xoxp-", "xoxr-"} {
		texts = append(texts, p+"1234567890abc")
	}
	for _, p := range []string{"shpat_", "shpca_", "shppa_", "shpss_"} {
		texts = append(texts, p+x("0a", 16))
	}
	for _, k := range []string{"password", "passwd", "passphrase", "secret", "api_key", "api-key", "apikey", "access_key",
		"access-token", "auth_token", "client_secret", "private_key", "token", "db_password"} {
		texts = append(texts, k+"=hunter2x9", k+": \"hunter2x9\"")
	}
	return texts
}
