package render

import "unicode/utf8"

// Tokens estimates how many model tokens s costs, without a tokenizer, so
// that the count is the same on every machine and needs no model files.
//
// The rule: s is cut into words at white space; a word of n ASCII bytes
// costs ceil(n/4) tokens (the usual rule of thumb for BPE tokenizers on
// English and code), and every non-ASCII character costs one more token
// (CJK text and emoji are about a token per character). White space is
// free. For English prose this overestimates by about a quarter, which
// errs on the side of a head that fits; for random ids it underestimates,
// which is why heads keep ids short and few.
//
// Because white space is free the count of a document is the sum of the
// counts of its lines, which lets the renderer budget line by line.
func Tokens(s string) int {
	n := 0
	ascii := 0
	inWord := false
	flush := func() {
		n += (ascii + 3) / 4
		ascii = 0
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' {
				if inWord {
					flush()
					inWord = false
				}
				continue
			}
			inWord = true
			ascii++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		inWord = true
		n++
	}
	if inWord {
		flush()
	}
	return n
}
