package recall

// Ranking of transcript hits past the index's text score: the answer to a
// question is often the turn next to the one that matches (the reply to
// it, or a turn that says "it"), and a session that holds several strong
// hits is likely the one the question is about. See docs/RETRIEVAL.md,
// "Ranking".

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/transcript"
)

const (
	// liftDepth is how many of the best transcript hits lift others: the
	// strong ones, and few enough that reading their neighbours stays
	// cheap.
	liftDepth = 30
	// replyLift and priorLift are the shares of a hit's score given to
	// the turn just after it (the reply, where the answer to what the hit
	// says usually is) and to the turn just before it. Under 1, so a turn
	// lifted by a hit never ranks above it on the lift alone (unless the
	// hit asks, see askShare). Measured on fixtures/recall, issue 36: one
	// share of 0.6 for both, recall@5/@10 tune 0.590/0.731, held-out
	// 0.649/0.744; see docs/RETRIEVAL.md for the figures after.
	replyLift = 0.7
	priorLift = 0.3
	// followUpLift is the share of a hit's score given to the answer to a
	// follow-up question: when the turn after a hit asks ("Is he at least
	// paying on time?"), the turn after that question ("He paid half up
	// front …") answers what the hit was about, often in none of its
	// words. The reply's share: it is the reply to the hit's topic.
	// Measured on fixtures/recall, issue 36 (docs/RETRIEVAL.md): 0.5, 0.7,
	// 0.85 and 1.0 tried; 0.85 and 1.0 win one more tune question at 5
	// but lose a held-out temporal one at 10.
	followUpLift = replyLift
	// namedLift is the share of a hit's score given to the next turn of a
	// person the question names, among the namedTurns turns after the hit
	// (the hit's own speaker or another): "Why did Marlon sell his
	// camper?" matches Marlon's "I sold the old camper van", and his
	// answer comes after the other's "Why? You loved that van!", in none
	// of the question's words. Held below the hit as a reply is. Measured
	// on fixtures/recall, issue 36 (docs/RETRIEVAL.md): shares 0.5, 0.7,
	// 0.85 and 1.0 over 2, 3 and 5 turns; 0.85 won on the tune split,
	// over 2 or 3 turns alike.
	namedLift  = 0.85
	namedTurns = 3
	// askShare is the share of its own text score that a hit keeps when it
	// is a question (its text ends with "?"): a question shares the words
	// of a question about it, but the answer is in the reply, which is
	// lifted by the question's full score and not held below it.
	askShare = 0.4
	// sessionLift is the share of the other strong hits' scores of a
	// session that each of its hits gets, at most sessionLiftCap times the
	// best hit's score.
	sessionLift    = 0.1
	sessionLiftCap = 0.2
	// maxNeighbourBytes bounds how far back the turn before a hit is
	// looked for.
	maxNeighbourBytes = 64 << 10
)

// HitWhy says why a hit ranked where it did (recall --explain).
type HitWhy struct {
	// Text is the index's score for the hit's own words (and those of the
	// turn before it, its context), Terms its parts: each matched term,
	// the speaker named in the query and the day asked about.
	Text  float64        `json:"text"`
	Terms []index.Weight `json:"terms"`
	// Neighbour is the lift from the hit next to it, NeighbourOf that
	// hit's id.
	Neighbour   float64 `json:"neighbour,omitempty"`
	NeighbourOf string  `json:"neighbour_of,omitempty"`
	// Named, when set, says the lift is namedLift's: the hit is the next
	// turn after NeighbourOf of a person the question names (Named).
	Named string `json:"named,omitempty"`
	// Session is the lift from other strong hits of the same session.
	Session float64 `json:"session,omitempty"`
	// Held says the sum was held just below the score of the hit that
	// lifted this one: a lifted turn whose own text scores no more than
	// that hit's never ranks above it.
	Held bool `json:"held,omitempty"`
	// Asks says the hit is a question: its text score is askShare of what
	// its terms add up to, and the turn after it is not held below it.
	Asks bool `json:"asks,omitempty"`
	// Fusion says which rankings the hit came from, with [embed].
	Fusion *FuseWhy `json:"fusion,omitempty"`
}

// rankedHit is an index hit with its lifts.
type rankedHit struct {
	index.Hit
	text, neighbour, session float64
	neighbourOf              string // index id of the lifting hit
	named                    string // the lift is namedLift: the name
	final                    float64
	held                     bool
	fused                    *FuseWhy // with [embed] (recallfuse.go)
	asks                     bool     // the hit is a question: see askShare
}

func (r rankedHit) score() float64 { return r.text + r.neighbour + r.session }

// liftTranscriptHits reorders transcript hits (best first, as index.Search
// returns them): the best liftDepth hits lift the turns before and after
// them (added when the index did not find them) and the other hits of
// their session. Ties are broken by id, so the order depends only on the
// scores. msgIDs, when not nil, receives the message id of every index id
// read, for explanations.
func liftTranscriptHits(v *vault.Vault, hits []index.Hit, names []string, msgIDs map[string]string) []rankedHit {
	byID := make(map[string]*rankedHit, len(hits))
	out := make([]*rankedHit, 0, len(hits))
	for _, h := range hits {
		r := &rankedHit{Hit: h, text: h.Score}
		byID[h.ID] = r
		out = append(out, r)
	}
	top := hits[:min(len(hits), liftDepth)]
	files := map[string]*os.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	sessions := map[string][]*rankedHit{}
	for _, h := range top {
		file, off, ok := messageDoc(h.ID)
		if !ok {
			continue
		}
		agent, session := transcriptOfPart(file)
		sessions[agent+"/"+session] = append(sessions[agent+"/"+session], byID[h.ID])
		f := files[file]
		if f == nil {
			var err error
			if f, err = v.Files().Open(filepath.Join(v.Root, filepath.FromSlash(file))); err != nil {
				continue
			}
			files[file] = f
		}
		prev, next, after, id, asks := neighbourOffsets(f, off)
		said, name := int64(-1), ""
		if len(names) > 0 {
			said, name = namedTurnAfter(f, off, names)
		}
		if id != "" && msgIDs != nil {
			msgIDs[h.ID] = id
		}
		if asks {
			r := byID[h.ID]
			r.text, r.asks = askShare*h.Score, true
		}
		out = liftNeighbours(byID, out, h, file, [4]int64{prev, next, after, said}, name)
	}
	if len(hits) > 0 {
		liftSessions(sessions, hits[0].Score)
	}
	// A turn lifted by a hit stays below it unless its own text scores
	// more: the turn after a hit holds the hit's words in its context, and
	// that and the lift together could otherwise put it first. The hits
	// are held in order of score, so a chain of lifts holds too. A
	// question holds nothing below it: its reply is what answers.
	for _, r := range out {
		r.final = r.score()
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].final > out[j].final })
	for _, r := range out {
		if h := byID[r.neighbourOf]; h != nil && !h.asks && r.text <= h.text && r.final >= h.final {
			r.final, r.held = math.Nextafter(h.final, 0), true
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := out[i].final, out[j].final; a != b {
			return a > b
		}
		return out[i].ID < out[j].ID
	})
	ranked := make([]rankedHit, len(out))
	for i, r := range out {
		ranked[i] = *r
		ranked[i].Score = r.final
	}
	return ranked
}

// liftNeighbours lifts the turns of file at the offsets nbs (the turn
// before h, its reply, the answer to a follow-up question, the next turn
// of the person named; -1 where there is none) by their shares of h's
// score, adding those the index did not find to byID and out.
func liftNeighbours(byID map[string]*rankedHit, out []*rankedHit, h index.Hit, file string, nbs [4]int64, name string) []*rankedHit {
	for i, nb := range nbs {
		if nb < 0 {
			continue
		}
		share := [4]float64{priorLift, replyLift, followUpLift, namedLift}[i]
		nid := messageDocID(file, nb)
		r := byID[nid]
		if r == nil {
			r = &rankedHit{Hit: index.Hit{ID: nid}}
			byID[nid] = r
			out = append(out, r)
		}
		if lift := share * h.Score; lift > r.neighbour {
			r.neighbour, r.neighbourOf, r.named = lift, h.ID, ""
			if i == 3 {
				r.named = name
			}
		}
	}
	return out
}

// liftSessions gives each strong hit sessionLift of the text scores of the
// other strong hits of its session, at most sessionLiftCap of the best
// hit's score.
func liftSessions(sessions map[string][]*rankedHit, best float64) {
	for _, hs := range sessions {
		var sum float64
		for _, r := range hs {
			sum += r.text
		}
		for _, r := range hs {
			r.session = min(sessionLift*(sum-r.text), sessionLiftCap*best)
		}
	}
}

// A transcript message's document id is "m|<agent>/<part name>|<offset>",
// the offset in base 36: the part's path without what every part's path
// has ("transcripts/", ".jsonl"). Ids are most of what an index stores per
// document beside the words, and there is one per message.
func messageDocID(rel string, off int64) string {
	name := strings.TrimSuffix(strings.TrimPrefix(rel, "transcripts/"), ".jsonl")
	return "m|" + name + "|" + strconv.FormatInt(off, 36)
}

// messageDoc returns the part and offset of a transcript document id.
func messageDoc(id string) (file string, off int64, ok bool) {
	rest, ok := strings.CutPrefix(id, "m|")
	i := strings.LastIndexByte(rest, '|')
	if !ok || i < 0 {
		return "", 0, false
	}
	off, err := strconv.ParseInt(rest[i+1:], 36, 64)
	if err != nil {
		return "", 0, false
	}
	return "transcripts/" + rest[:i] + ".jsonl", off, true
}

// contextMax is how much of the turn before a message is indexed as its
// context: its end, where the question a reply answers usually is.
// Measured on the quality set (recall@5/@10): whole turn 0.658/0.797,
// last 200 bytes 0.663/0.792, 120 0.649/0.797, 80 0.673/0.802, 64
// 0.649/0.807, all within a run's noise; the context was 40 % of the
// index, and 64 bytes bring the index under 0.8× the text.
const contextMax = 64

// contextTail is the end of text, at most contextMax bytes, from a word
// boundary.
func contextTail(text string) string {
	if len(text) <= contextMax {
		return text
	}
	tail := text[len(text)-contextMax:]
	if i := strings.IndexAny(tail, " \n\t"); i >= 0 {
		return tail[i+1:]
	}
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return tail
}

// neighbourOffsets returns where the conversation turns before and after
// the line at off start (-1 where there is none: the start or end of the
// part, or a neighbour that is not a turn of a person or the agent), and,
// when the turn after asks, where the turn after that starts (its answer,
// -1 otherwise); the id of the message at off, and whether it asks (a
// turn of a person or the agent whose text ends with a question mark).
func neighbourOffsets(f *os.File, off int64) (prev, next, after int64, id string, asks bool) {
	prev, next, after = -1, -1, -1
	line, ok := lineFrom(f, off)
	if !ok {
		return prev, next, after, "", false
	}
	if m, err := transcript.DecodeLine(line); err == nil {
		id = m.ID
		asks = isTurnMessage(m) && strings.HasSuffix(strings.TrimSpace(m.Text), "?")
	}
	if nextLine, ok := lineFrom(f, off+int64(len(line))); ok {
		if m, err := transcript.DecodeLine(nextLine); err == nil && isTurnMessage(m) {
			next = off + int64(len(line))
			if strings.HasSuffix(strings.TrimSpace(m.Text), "?") {
				if answer, ok := lineFrom(f, next+int64(len(nextLine))); ok && isTurn(answer) {
					after = next + int64(len(nextLine))
				}
			}
		}
	}
	if start, ok := lineBefore(f, off); ok {
		if line, ok := lineFrom(f, start); ok && isTurn(line) {
			prev = start
		}
	}
	return prev, next, after, id, asks
}

// namedTurnAfter returns where the first turn after the line at off that
// a person of names spoke starts, among the namedTurns turns after it, and
// the name (-1 and "" when there is none, or a line between is not a
// turn).
func namedTurnAfter(f *os.File, off int64, names []string) (int64, string) {
	line, ok := lineFrom(f, off)
	if !ok {
		return -1, ""
	}
	pos := off + int64(len(line))
	for range namedTurns {
		line, ok := lineFrom(f, pos)
		if !ok {
			return -1, ""
		}
		m, err := transcript.DecodeLine(line)
		if err != nil || !isTurnMessage(m) {
			return -1, ""
		}
		for _, w := range index.SpeakerWords(m.Speaker) {
			if slices.Contains(names, w) {
				return pos, w
			}
		}
		pos += int64(len(line))
	}
	return -1, ""
}

// lineBefore returns where the line ending just before off starts, reading
// backwards a block at a time, at most maxNeighbourBytes.
func lineBefore(f *os.File, off int64) (int64, bool) {
	if off <= 0 {
		return 0, false
	}
	end := off - 1 // the newline that ends the line before
	buf := make([]byte, 4096)
	for pos := end; pos > 0 && end-pos < maxNeighbourBytes; {
		from := max(0, pos-int64(len(buf)))
		n, err := f.ReadAt(buf[:pos-from], from)
		if err != nil && n < int(pos-from) {
			return 0, false
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return from + int64(i) + 1, true
		}
		pos = from
	}
	if end < maxNeighbourBytes {
		return 0, true // the first line of the part
	}
	return 0, false
}

// lineFrom reads the complete line starting at off, newline included.
func lineFrom(f *os.File, off int64) ([]byte, bool) {
	buf := make([]byte, 0, 1024)
	chunk := make([]byte, 4096)
	for len(buf) < maxNeighbourBytes {
		n, err := f.ReadAt(chunk, off+int64(len(buf)))
		if i := bytes.IndexByte(chunk[:n], '\n'); i >= 0 {
			return append(buf, chunk[:i+1]...), true
		}
		buf = append(buf, chunk[:n]...)
		if err == io.EOF || n == 0 || err != nil {
			return nil, false
		}
	}
	return nil, false
}

// isTurn reports whether a stored line is a message of a person or the
// agent with text: what a question can be answered by.
func isTurn(line []byte) bool {
	m, err := transcript.DecodeLine(line)
	return err == nil && isTurnMessage(m)
}

func isTurnMessage(m transcript.Stored) bool {
	if strings.TrimSpace(m.Text) == "" {
		return false
	}
	return (m.Role == transcript.RoleUser || m.Role == transcript.RoleAssistant) &&
		m.Kind != transcript.KindContext && m.Kind != transcript.KindBoundary
}
