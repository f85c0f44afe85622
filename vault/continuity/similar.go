package continuity

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Two rules beyond exact text (docs/CONTINUITY.md, "Reinforcement" and
// "Contradiction rule"), both deterministic and both explained:
//
//   - a reworded learning: the same words once stop words are set aside
//     and the words are stemmed lightly (similar);
//   - two choices for the same subject: "use React Hook Form over Formik"
//     and "use Formik over React Hook Form", "use postgres for the cache"
//     and "use redis for the cache" (choiceConflict).

// stopWords carry no content for telling two learnings apart. Negations
// are not among them: "X" and "do not X" are never a rewording.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "but": true, "if": true, "then": true,
	"of": true, "to": true, "in": true, "on": true, "at": true, "by": true, "for": true, "with": true,
	"from": true, "into": true, "onto": true, "as": true, "is": true, "are": true, "was": true, "were": true,
	"be": true, "been": true, "being": true, "it": true, "its": true, "this": true, "that": true, "these": true,
	"those": true, "there": true, "here": true, "when": true, "while": true, "because": true, "so": true,
	"we": true, "you": true, "i": true, "our": true, "your": true, "they": true, "their": true, "s": true,
	"do": true, "does": true, "did": true, "has": true, "have": true, "had": true, "will": true, "would": true,
	"can": true, "could": true, "should": true, "must": true, "may": true, "might": true, "always": true,
	"please": true, "make": true, "sure": true, "ensure": true, "also": true, "just": true, "very": true,
	"any": true, "all": true, "every": true, "each": true, "some": true,
}

// stem is a light stemmer: plural and verb endings off, so that "fails",
// "failed" and "failing" are one word, "caches", "cached" and "caching"
// another. It never stems a word shorter than five letters, and never
// below three letters.
func stem(w string) string {
	if len(w) < 5 {
		return strings.TrimSuffix(w, "s")
	}
	switch {
	case strings.HasSuffix(w, "ies"):
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "xes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	for _, suf := range []string{"ing", "ed"} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 3 {
			w = w[:len(w)-len(suf)]
			if n := len(w); n >= 4 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) {
				w = w[:n-1] // "stopped" → "stop", not "stopp"
			}
			break
		}
	}
	if len(w) > 4 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1] // "cache" and "cach(ing)" meet
	}
	return w
}

// words splits a text into its polarity (negations as instruction counts
// them) and its stemmed content words, stop words set aside.
func words(s string) (neg bool, out map[string]bool) {
	out = map[string]bool{}
	for _, w := range strings.Fields(NormalizeText(s)) {
		switch {
		case negations[w]:
			neg = !neg
		case stopWords[w]:
		default:
			out[stem(w)] = true
		}
	}
	return neg, out
}

// Similarity thresholds: two texts of the same polarity are one learning
// reworded when their stemmed content words overlap by at least 3/4 of
// their union (Jaccard), or when every word of the shorter one, at least
// three, is in the longer one and they share at least 0.6 of the union.
// The table of TestSimilar is the reason for these numbers: one word
// replaced in five ("postgres migrations need a lock timeout" / "redis
// migrations need a lock timeout", 0.67) is a different learning; one
// word added ("… on big tables") is the same one said more fully.
const (
	similarJaccard  = 0.75
	containJaccard  = 0.6
	containMinWords = 3
)

// similar reports whether two texts are one learning reworded, and why.
func similar(a, b string) (bool, string) {
	na, wa := words(a)
	nb, wb := words(b)
	return similarWords(na, wa, nb, wb)
}

func similarWords(na bool, wa map[string]bool, nb bool, wb map[string]bool) (bool, string) {
	if na != nb || len(wa) == 0 || len(wb) == 0 {
		return false, ""
	}
	var shared []string
	for w := range wa {
		if wb[w] {
			shared = append(shared, w)
		}
	}
	sort.Strings(shared)
	union := len(wa) + len(wb) - len(shared)
	j := float64(len(shared)) / float64(union)
	small := min(len(wa), len(wb))
	why := fmt.Sprintf("shares %d of %d words (%s), Jaccard %.2f", len(shared), union, strings.Join(shared, " "), j)
	switch {
	case j >= similarJaccard:
		return true, why
	case len(shared) == small && small >= containMinWords && j >= containJaccard:
		return true, why + ", the shorter contained in the longer"
	}
	return false, ""
}

// choice is a decision read as a choice: what it chooses, what it chose
// it over, and what for. A text that is not a choice has no chosen words.
type choice struct {
	chosen, rejected, subject []string  // stemmed content words, sorted
	said                      [3]string // chosen, rejected, subject as written (content words, in order)
}

// choiceVerbs start a choice: "use X", "switch to X", "go with X".
var choiceVerbs = [][]string{
	{"use"}, {"using"}, {"choose"}, {"chose"}, {"pick"}, {"adopt"}, {"prefer"}, {"go", "with"},
	{"switch", "to"}, {"move", "to"}, {"migrate", "to"}, {"stick", "with"}, {"standardize", "on"},
	{"standardise", "on"}, {"keep"}, {"default", "to"},
}

// choiceMarkers set what is chosen against what is not.
var choiceMarkers = [][]string{{"over"}, {"instead", "of"}, {"rather", "than"}, {"in", "place", "of"}, {"vs"}, {"versus"}}

// subjectMarkers say what a choice is for: "use redis for the cache",
// "use redis as the cache", "use tabs in makefiles".
var subjectMarkers = map[string]bool{"for": true, "as": true, "in": true}

// parseChoice reads a decision as a choice. A negated text is not one
// (the negation rule reads it), nor a text with neither a choice verb nor
// a marker ("the API is versioned").
func parseChoice(s string) choice {
	neg, _ := instruction(s)
	if neg {
		return choice{}
	}
	ws := strings.Fields(NormalizeText(s))
	for len(ws) > 0 && (filler[ws[0]] || ws[0] == "let" || ws[0] == "s" || ws[0] == "will") {
		ws = ws[1:]
	}
	verb := false
	for _, v := range choiceVerbs {
		if hasPrefixWords(ws, v) {
			ws, verb = ws[len(v):], true
			break
		}
	}
	at, mlen := -1, 0
	for i := range ws {
		for _, m := range choiceMarkers {
			if hasPrefixWords(ws[i:], m) {
				at, mlen = i, len(m)
				break
			}
		}
		if at >= 0 {
			break
		}
	}
	if !verb && at < 0 {
		return choice{}
	}
	var c choice
	first, rest := ws, []string(nil)
	if at >= 0 {
		first, rest = ws[:at], ws[at+mlen:]
	}
	chosen, subj1 := splitSubject(first)
	rejected, subj2 := splitSubject(rest)
	subject := append(append([]string(nil), subj1...), subj2...)
	c.chosen, c.rejected, c.subject = contentOf(chosen), contentOf(rejected), contentOf(subject)
	c.said = [3]string{said(chosen), said(rejected), said(subject)}
	return c
}

// splitSubject cuts "X for S" into X and S at the first subject marker.
func splitSubject(ws []string) (what, subject []string) {
	for i, w := range ws {
		if subjectMarkers[w] && i > 0 {
			return ws[:i], ws[i+1:]
		}
	}
	return ws, nil
}

// said is ws as written, stop words and filler left out.
func said(ws []string) string {
	var out []string
	for _, w := range ws {
		if !stopWords[w] && !filler[w] {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

func hasPrefixWords(ws, p []string) bool {
	if len(ws) < len(p) {
		return false
	}
	for i := range p {
		if ws[i] != p[i] {
			return false
		}
	}
	return true
}

// contentOf is the stemmed content words of ws, sorted, stop words and
// filler set aside.
func contentOf(ws []string) []string {
	set := map[string]bool{}
	for _, w := range ws {
		if !stopWords[w] && !filler[w] {
			set[stem(w)] = true
		}
	}
	out := make([]string, 0, len(set))
	for w := range set {
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}

func sameWords(a, b []string) bool {
	if len(a) == 0 || len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// subsetWords reports whether every word of a is in b (both sorted).
func subsetWords(a, b []string) bool {
	i := 0
	for _, w := range b {
		if i < len(a) && a[i] == w {
			i++
		}
	}
	return i == len(a)
}

// choiceConflict says why two choices contradict, or "": for the same
// subject (the same words, or both none), one chooses what the other
// chose against ("use Formik over React Hook Form" after "use React Hook
// Form over Formik"); or, for a subject named, they choose differently,
// neither choice containing the other ("use redis for the cache" after
// "use postgres for the cache"; "use redis cluster for the cache" refines
// "use redis for the cache" and does not contradict it).
func choiceConflict(a, b choice) string {
	if len(a.chosen) == 0 || len(b.chosen) == 0 || strings.Join(a.subject, " ") != strings.Join(b.subject, " ") {
		return ""
	}
	for _, p := range [][2]choice{{a, b}, {b, a}} {
		if sameWords(p[0].rejected, p[1].chosen) {
			return fmt.Sprintf("one chooses %q, which the other chose against (%q over %q)%s",
				p[1].said[0], p[0].said[0], p[0].said[1], forSubject(a.said[2]))
		}
	}
	if len(a.subject) > 0 && !subsetWords(a.chosen, b.chosen) && !subsetWords(b.chosen, a.chosen) {
		return fmt.Sprintf("two different choices for the same subject %q: %q and %q", a.said[2], a.said[0], b.said[0])
	}
	return ""
}

func forSubject(subject string) string {
	if subject == "" {
		return ""
	}
	return " for " + subject
}

// Conflict says why two instructions (decisions, preventions) contradict,
// or "" when they do not: the negation rule (Contradicts) or two choices
// for the same subject (choiceConflict).
func Conflict(a, b string) string {
	if Contradicts(a, b) {
		return "one says not to do what the other says (negation, most words shared)"
	}
	return choiceConflict(parseChoice(a), parseChoice(b))
}

// eachChoiceConflict calls fn(i, j, why) for every pair i < j of choices
// that conflict, i ascending and j ascending for each i; fn returns false
// to go on to the next i. Only choices for the same subject can conflict,
// so they are compared within those groups.
func eachChoiceConflict(cs []choice, fn func(i, j int, why string) bool) {
	groups := map[string][]int{}
	for i, c := range cs {
		if len(c.chosen) > 0 {
			k := strings.Join(c.subject, " ")
			groups[k] = append(groups[k], i)
		}
	}
	next := make([][]int, len(cs)) // i → its partners j > i
	for k, g := range groups {
		if k != "" {
			// A subject named: different choices conflict too; compare
			// every pair of the group.
			for x, i := range g {
				for _, j := range g[x+1:] {
					if choiceConflict(cs[i], cs[j]) != "" {
						next[i] = append(next[i], j)
					}
				}
			}
			continue
		}
		// No subject: only what one chose against and the other chose;
		// found by the words, without comparing every pair.
		byChosen := map[string][]int{}
		for _, i := range g {
			byChosen[strings.Join(cs[i].chosen, " ")] = append(byChosen[strings.Join(cs[i].chosen, " ")], i)
		}
		for _, i := range g {
			if len(cs[i].rejected) == 0 {
				continue
			}
			for _, j := range byChosen[strings.Join(cs[i].rejected, " ")] {
				if i == j {
					continue // "use X over X" chooses against nothing else
				}
				a, b := min(i, j), max(i, j)
				next[a] = append(next[a], b)
			}
		}
	}
	for i := range next {
		slices.Sort(next[i])
		next[i] = slices.Compact(next[i])
	}
	for i, js := range next {
		for _, j := range js {
			if !fn(i, j, choiceConflict(cs[i], cs[j])) {
				break
			}
		}
	}
}
