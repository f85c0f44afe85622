package redact

import (
	"encoding/base64"
	"math"
	"strings"
)

// secretWords are the words after which a bare token is taken for the
// credential they name: "secret key Zq3vJ8kP…", "token: Zq3vJ8kP…". They
// are looked for in the text's ASCII lower case.
var secretWords = []string{"key", "secret", "token", "password", "passwd", "passphrase"}

// Bounds of a token the entropy rule redacts: shorter is a word or a
// setting, longer is data (a hash list, base64 of a file).
const (
	minEntropyToken = 20
	maxEntropyToken = 256
	// minEntropy is the Shannon entropy, in bits per character, a token
	// must reach: random base62 of 20 characters is near 4.1, English
	// words and identifiers run together stay under 3.5.
	minEntropy = 3.5
)

// afterSecretWord is the entropy rule's scan: a word of secretWords (a
// plural too), then spaces or one operator (":" or "=") with spaces, an
// optional quote, and a token of base64 or URL-safe characters that
// mixes upper case, lower case and digits and is random enough
// (highEntropy). It is a scan rather than a pattern because the words are
// common: the scan costs one pass over the text per word, a pattern many.
func afterSecretWord(text string) [][2]int {
	lower := asciiLower(text)
	var spans [][2]int
	for _, w := range secretWords {
		for from := 0; ; {
			i := strings.Index(lower[from:], w)
			if i < 0 {
				break
			}
			i += from
			from = i + len(w)
			if i > 0 && isWordByte(lower[i-1]) && !(lower[i-1] == '_' || lower[i-1] == '-') {
				continue // "monkey", "turnkey": not the word
			}
			if sp, ok := tokenAfter(text, from); ok {
				spans = append(spans, sp)
			}
		}
	}
	if len(spans) < 2 {
		return spans
	}
	// In text order, without overlaps ("secret key X" finds X twice).
	sortSpans(spans)
	out := spans[:1]
	for _, sp := range spans[1:] {
		if sp[0] >= out[len(out)-1][1] {
			out = append(out, sp)
		}
	}
	return out
}

// tokenAfter reads, from i (just past a secret word), the separator and
// the token the entropy rule redacts, and returns the token's span.
func tokenAfter(text string, i int) ([2]int, bool) {
	if i < len(text) && text[i] == 's' {
		i++ // keys, tokens
	}
	start := i
	for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	if i < len(text) && (text[i] == ':' || text[i] == '=') {
		i++
		for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
			i++
		}
	}
	if i == start {
		return [2]int{}, false // "keyZq3…": no separator, not the word
	}
	if i < len(text) && (text[i] == '"' || text[i] == '\'' || text[i] == '`') {
		i++
	}
	j := i
	for j < len(text) && isTokenByte(text[j]) {
		j++
	}
	// A token ends at a space, a quote or punctuation, not inside a word
	// of other letters ("key Zq3…é" is not a token).
	if j < len(text) && text[j] >= 0x80 {
		return [2]int{}, false
	}
	tok := strings.TrimRight(text[i:j], "=")
	if len(tok) < minEntropyToken || len(tok) > maxEntropyToken || !highEntropy(tok) {
		return [2]int{}, false
	}
	return [2]int{i, j}, true
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c >= 0x80
}

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '_' || c == '-' || c == '='
}

// highEntropy accepts a token that mixes upper case, lower case and
// digits, has no run of path segments (a/b/c), and reaches minEntropy.
func highEntropy(tok string) bool {
	var upper, lower, digit bool
	var freq [256]int
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		freq[c]++
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= '0' && c <= '9':
			digit = true
		}
	}
	if !upper || !lower || !digit || strings.Count(tok, "/") > 1 && !strings.ContainsAny(tok, "+=") {
		return false
	}
	return shannon(freq[:], len(tok)) >= minEntropy
}

// shannon is the entropy in bits per character of a text of n bytes
// whose byte counts are freq.
func shannon(freq []int, n int) float64 {
	h := 0.0
	for _, f := range freq {
		if f > 0 {
			p := float64(f) / float64(n)
			h -= p * math.Log2(p)
		}
	}
	return h
}

func sortSpans(spans [][2]int) {
	for i := 1; i < len(spans); i++ {
		for j := i; j > 0 && spans[j][0] < spans[j-1][0]; j-- {
			spans[j], spans[j-1] = spans[j-1], spans[j]
		}
	}
}

// registryAuth accepts a registry login's value: an "auth" that is base64
// of user:password, or an identity token of some length.
func registryAuth(v string) bool {
	if !notPlaceholder(v) {
		return false
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
		if b, err := enc.DecodeString(v); err == nil && strings.Contains(string(b), ":") {
			return true
		}
	}
	return len(v) >= 20 && hasDigit(v)
}
