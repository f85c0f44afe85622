package index

// Word forms the English stemmer does not join: irregular verbs (bought and
// buy stem apart), number words and digits, and compounds written joined or
// hyphenated. Both a document's text and a query are expanded the same way
// before analysis: each word that has another form here gets that form
// added, so "bought" also indexes "buy" and "forty-one" also "41". The
// table is fixed and small, so the expansion is deterministic and the same
// in every vault.

import (
	"strconv"
	"strings"
	"unicode"
)

// irregular maps past forms and participles to their base form.
var irregular = map[string]string{
	"ate": "eat", "eaten": "eat", "became": "become", "began": "begin", "begun": "begin",
	"bent": "bend", "bit": "bite", "bitten": "bite", "blew": "blow", "blown": "blow",
	"broke": "break", "broken": "break", "brought": "bring", "built": "build", "bought": "buy",
	"caught": "catch", "chose": "choose", "chosen": "choose", "came": "come", "dealt": "deal",
	"dug": "dig", "drew": "draw", "drawn": "draw", "drank": "drink", "drunk": "drink",
	"drove": "drive", "driven": "drive", "fell": "fall", "fallen": "fall", "fed": "feed",
	"felt": "feel", "fought": "fight", "found": "find", "fled": "flee", "flew": "fly",
	"flown": "fly", "forgot": "forget", "forgotten": "forget", "froze": "freeze", "frozen": "freeze",
	"gave": "give", "given": "give", "went": "go", "gone": "go", "grew": "grow", "grown": "grow",
	"hung": "hang", "heard": "hear", "hid": "hide", "hidden": "hide", "held": "hold",
	"kept": "keep", "knew": "know", "known": "know", "laid": "lay", "led": "lead", "left": "leave",
	"lent": "lend", "lost": "lose", "made": "make", "meant": "mean", "met": "meet", "paid": "pay",
	"rode": "ride", "ridden": "ride", "rang": "ring", "rung": "ring", "rose": "rise", "risen": "rise",
	"ran": "run", "said": "say", "saw": "see", "seen": "see", "sought": "seek", "sold": "sell",
	"sent": "send", "shook": "shake", "shaken": "shake", "shot": "shoot", "sang": "sing", "sung": "sing",
	"sank": "sink", "sunk": "sink", "sat": "sit", "slept": "sleep", "spoke": "speak", "spoken": "speak",
	"spent": "spend", "stood": "stand", "stole": "steal", "stolen": "steal", "stuck": "stick",
	"struck": "strike", "swore": "swear", "sworn": "swear", "swam": "swim", "swum": "swim",
	"took": "take", "taken": "take", "taught": "teach", "tore": "tear", "torn": "tear",
	"told": "tell", "thought": "think", "threw": "throw", "thrown": "throw", "understood": "understand",
	"woke": "wake", "woken": "wake", "wore": "wear", "worn": "wear", "won": "win", "wrote": "write",
	"written": "write", "withdrew": "withdraw", "forbade": "forbid", "forgave": "forgive",
	"overtook": "overtake", "undertook": "undertake", "mistook": "mistake", "rebuilt": "rebuild",
	"rewrote": "rewrite", "rewritten": "rewrite", "upheld": "uphold", "withheld": "withhold",
}

// numberWords are the number words that become digits. "one" is left out:
// it is far more often a pronoun ("the new one") than a count.
var numberWords = map[string]int{
	"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
	"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
	"sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
	"forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
	"hundred": 100, "thousand": 1000, "dozen": 12,
}

// tens are the number words that take a unit after a hyphen: forty-one.
var tens = map[string]bool{"twenty": true, "thirty": true, "forty": true, "fifty": true,
	"sixty": true, "seventy": true, "eighty": true, "ninety": true}

// units completes tens: "one" counts here (forty-one is 41).
var units = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
	"seven": 7, "eight": 8, "nine": 9}

// maxCompound bounds a joined compound: longer runs of hyphenated words are
// identifiers or prose, not a compound.
const maxCompound = 24

// wordForms returns the other forms of the words of text that the stemmer
// does not join, space-separated ("" when there are none): base forms of
// irregular verbs, digits for number words, and hyphenated compounds
// joined ("hand-over" gives "handover").
func wordForms(text string) string {
	var b strings.Builder
	add := func(s string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '’' }
	for _, field := range strings.FieldsFunc(text, func(r rune) bool { return !isWord(r) && r != '-' }) {
		parts := strings.FieldsFunc(field, func(r rune) bool { return r == '-' })
		if len(parts) == 0 {
			continue
		}
		for i, p := range parts {
			parts[i] = strings.ToLower(p)
		}
		if len(parts) == 2 && tens[parts[0]] && units[parts[1]] > 0 {
			add(strconv.Itoa(numberWords[parts[0]] + units[parts[1]]))
			continue
		}
		if len(parts) > 1 && len(parts) <= 3 {
			joined := strings.Join(parts, "")
			if len(joined) <= maxCompound && !hasDigit(joined) {
				add(joined)
			}
		}
		for _, p := range parts {
			if base, ok := irregular[p]; ok {
				add(base)
			} else if n, ok := numberWords[p]; ok {
				add(strconv.Itoa(n))
			}
		}
	}
	return b.String()
}

func hasDigit(s string) bool {
	return strings.IndexFunc(s, unicode.IsDigit) >= 0
}

// withForms is text with its other word forms after it.
func withForms(text string) string {
	if f := wordForms(text); f != "" {
		return text + "\n" + f
	}
	return text
}
