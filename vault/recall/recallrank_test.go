package recall

import (
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/index"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
)

func appendTurns(t testing.TB, v *vault.Vault, session string, msgs ...transcript.Message) {
	t.Helper()
	_, err := v.Update(vault.TxOptions{NoCommit: true}, func(tx *vault.Tx) error {
		_, _, err := tx.AppendText(transcript.Ref{Agent: v.Config.Agent, Session: session}, msgs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func user(who, text string) transcript.Message {
	return transcript.Message{Role: transcript.RoleUser, Speaker: who, Text: text}
}

func agentSays(text string) transcript.Message {
	return transcript.Message{Role: transcript.RoleAssistant, Speaker: "agent", Text: text}
}

func explainRecall(t *testing.T, v *vault.Vault, q string) []Hit {
	t.Helper()
	res, err := Recall(v, RecallOptions{Query: q, Agent: v.Config.Agent, AllThreads: true, Tier: TierTranscripts, Limit: 20, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	return res.Hits
}

// A hit lifts the turn before it (the reply's question), which is found
// though it shares no word with the query, and ranks below the hit that
// lifted it; the turn after it is lifted by the hit and by its context.
func TestNeighbourLift(t *testing.T) {
	for _, reindex := range []bool{false, true} {
		v := testvault.New(t)
		appendTurns(t, v, "s1",
			user("dana", "Which payment provider do we keep?"),
			agentSays("Stripe, the wombat provider, stays."),
			user("dana", "Good, thanks."),
			user("dana", "Unrelated: lunch at noon."))
		appendTurns(t, v, "s2", user("bob", "nothing here about it"))
		if reindex {
			if _, err := Reindex(v, nil); err != nil {
				t.Fatal(err)
			}
		}
		hits := explainRecall(t, v, "wombat")
		var texts []string
		for _, h := range hits {
			texts = append(texts, h.Text)
		}
		if len(hits) < 3 || !strings.Contains(hits[0].Text, "wombat") || !slices.Contains(texts, "Which payment provider do we keep?") {
			t.Fatalf("reindex %v: hits %q, want the wombat turn first and the turn before it found", reindex, texts)
		}
		for _, h := range hits[1:] {
			if h.Why == nil || h.Why.Neighbour == 0 || h.Score >= hits[0].Score {
				t.Errorf("reindex %v: %q: why %+v, score %v: a neighbour must be lifted and rank below its hit (%v)", reindex, h.Text, h.Why, h.Score, hits[0].Score)
			}
		}
		// The reply after the hit holds the hit in its context and counts
		// as a hit itself; it may lift the turn after it in turn, but less.
		if hits[1].Why.NeighbourOf != hits[0].ID || hits[2].Why.NeighbourOf != hits[0].ID {
			t.Errorf("the wombat turn's neighbours do not come next: %q", texts)
		}
		if slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, "nothing") }) {
			t.Errorf("a turn of another session was lifted: %q", texts)
		}
	}
}

// A session with several strong hits lifts its hits above an equal hit
// alone in another session.
func TestSessionLift(t *testing.T) {
	v := testvault.New(t)
	appendTurns(t, v, "a-lone", user("dana", "the restic prune ran long"), user("dana", "unrelated"), user("dana", "unrelated too"))
	appendTurns(t, v, "b-many", user("dana", "the restic prune ran long"), user("dana", "unrelated"), user("dana", "restic prune again"),
		user("dana", "unrelated"), user("dana", "prune of restic, once more"))
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	hits := explainRecall(t, v, "restic prune ran long")
	var first, lone *Hit
	for i := range hits {
		if hits[i].Text == "the restic prune ran long" {
			if first == nil {
				first = &hits[i]
			} else {
				lone = &hits[i]
			}
		}
	}
	if first == nil || lone == nil || first.Session != "b-many" || first.Why.Session <= lone.Why.Session {
		t.Fatalf("the same text in a session of several hits did not rank first: %+v", hits)
	}
}

// Hits of equal score come out in id order whatever order they came in.
func TestLiftOrderIgnoresInputOrder(t *testing.T) {
	v := testvault.New(t)
	var hits []index.Hit
	for _, id := range []string{"m|x/none|1", "m|x/none|2", "m|x/other|1", "r|ledger|5", "m|x/none|a"} {
		hits = append(hits, index.Hit{ID: id, Score: 1})
	}
	var want []string
	for round := range 6 {
		in := slices.Clone(hits)
		rand.New(rand.NewSource(int64(round))).Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		var got []string
		for _, r := range liftTranscriptHits(v, in, nil, map[string]string{}) {
			got = append(got, r.ID)
		}
		if want == nil {
			want = got
		} else if !slices.Equal(got, want) {
			t.Fatalf("round %d: %v, want %v", round, got, want)
		}
	}
	if !slices.IsSorted(want) {
		t.Errorf("equal scores not in id order: %v", want)
	}
}

// A tool's output names a tool, not a person: its speaker is not indexed,
// so naming the tool does not lift it over a person's turn.
func TestToolSpeakerNotIndexed(t *testing.T) {
	v := testvault.New(t)
	appendTurns(t, v, "s1",
		transcript.Message{Role: transcript.RoleTool, Speaker: "grep", Text: "grep found the zebra config"},
		user("dana", "grep found the zebra config"))
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	hits := explainRecall(t, v, "grep zebra config")
	for _, h := range hits {
		for _, w := range h.Why.Terms {
			if w.Field == "speaker" {
				t.Errorf("%s (%s) was lifted by the speaker %q", h.ID, h.Kind, w.Term)
			}
		}
	}
}

func TestQueryDays(t *testing.T) {
	now := time.Date(2026, 4, 22, 15, 0, 0, 0, time.UTC) // a Wednesday
	for q, want := range map[string]string{
		"what broke on 19 February":    "2026-02-19",
		"what broke on February 19th":  "2026-02-19",
		"the outage on 2025-12-01":     "2025-12-01",
		"what did we do yesterday":     "2026-04-21",
		"what happened on Monday":      "2026-04-20",
		"the call last Wednesday":      "2026-04-15",
		"in May, what was planned":     "2025-05-01",
		"may I ask about the cache":    "",
		"port 5433 and 14:02":          "",
		"what happened on 25 December": "2025-12-25",
		"plans for today":              "2026-04-22",
	} {
		got := queryDays(q, now)
		first := ""
		if len(got) > 0 {
			first = got[0]
		}
		if first != want {
			t.Errorf("queryDays(%q) = %v, want first %q", q, got, want)
		}
	}
	if got := queryDays("what happened in March", now); len(got) != 31 || got[0] != "2026-03-01" || got[30] != "2026-03-31" {
		t.Errorf("in March: %v", got)
	}
	if got := queryDays("last week", now); len(got) != 7 || got[0] != "2026-04-13" || got[6] != "2026-04-19" {
		t.Errorf("last week: %v", got)
	}
}

func TestMessageDocID(t *testing.T) {
	for _, rel := range []string{"transcripts/default/s01.jsonl", "transcripts/a-b/0d9c-11|x.2.jsonl"} {
		for _, off := range []int64{0, 35, 1 << 40} {
			file, got, ok := messageDoc(messageDocID(rel, off))
			if !ok || file != rel || got != off {
				t.Errorf("%s|%d: back as %s|%d %v", rel, off, file, got, ok)
			}
		}
	}
	for _, bad := range []string{"r|ledger/x|12", "m|nobar", "m|x|zz!"} {
		if _, _, ok := messageDoc(bad); ok {
			t.Errorf("%q parsed as a message id", bad)
		}
	}
	long := strings.Repeat("word ", 40) + "which port does the database use?"
	if got := contextTail(long); len(got) > contextMax || !strings.HasSuffix(got, "use?") || strings.HasPrefix(got, "ord") {
		t.Errorf("contextTail = %q", got)
	}
}

// The turn after a hit holds the hit's words in its context and gets its
// lift as well; together they must not put it above the hit.
func TestLiftedTurnHeldBelowItsHit(t *testing.T) {
	v := testvault.New(t)
	appendTurns(t, v, "s1",
		transcript.Message{Role: transcript.RoleTool, Speaker: "go", Text: "FAIL QUOKKA"},
		user("dana", "and now something else entirely, a much longer turn of words"))
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	hits := explainRecall(t, v, "quokka")
	if len(hits) != 2 || hits[0].Text != "FAIL QUOKKA" || !hits[1].Why.Held || hits[1].Score >= hits[0].Score {
		t.Fatalf("the lifted turn is not held below its hit: %+v %+v", hits, hits[len(hits)-1].Why)
	}
}

// A question shares the words of a question about it, but the answer is
// in the reply: a hit that asks keeps askShare of its score, and the reply
// it lifts ranks above it, not held below (issue 36).
func TestQuestionHitYieldsToItsReply(t *testing.T) {
	v := testvault.New(t)
	appendTurns(t, v, "s1",
		user("teo", "Morning!"),
		user("teo", "Which wombat breed did you adopt in the end?"),
		user("nora", "A greyhound mix from the shelter, called Pepper."),
		user("teo", "Lovely."))
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	hits := explainRecall(t, v, "wombat breed adopted")
	if len(hits) < 2 || !strings.HasPrefix(hits[0].Text, "A greyhound mix") || !strings.HasPrefix(hits[1].Text, "Which wombat") {
		t.Fatalf("want the reply first, then the question: %+v", hits)
	}
	if q := hits[1].Why; q == nil || !q.Asks || hits[0].Why.Held || hits[0].Why.NeighbourOf != hits[1].ID {
		t.Errorf("why: reply %+v, question %+v", hits[0].Why, hits[1].Why)
	}
	// A statement is not a question: its reply stays held below it.
	v2 := testvault.New(t)
	appendTurns(t, v2, "s1",
		user("teo", "We adopted a wombat breed from the shelter."),
		user("nora", "A greyhound mix, called Pepper."))
	if _, err := Reindex(v2, nil); err != nil {
		t.Fatal(err)
	}
	hits = explainRecall(t, v2, "wombat breed adopted")
	if len(hits) < 2 || !strings.HasPrefix(hits[0].Text, "We adopted") || hits[0].Why.Asks {
		t.Fatalf("a statement lost its place to its reply: %+v", hits)
	}
}

// The turn after a hit (its reply) is lifted more than the turn before.
func TestReplyLiftedMoreThanTurnBefore(t *testing.T) {
	v := testvault.New(t)
	appendTurns(t, v, "s1",
		user("teo", "Any news?"),
		user("nora", "The quokka pottery class starts in May."),
		user("teo", "Good for you."))
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	byText := hitsByText(explainRecall(t, v, "quokka"))
	before, after := byText["Any news?"].Why, byText["Good for you."].Why
	if before == nil || after == nil || after.Neighbour <= before.Neighbour {
		t.Fatalf("reply lift %+v, lift of the turn before %+v: want the reply's larger", after, before)
	}
}

// A hit whose reply asks a follow-up question lifts the answer to that
// question, which shares no word with the hit or the query, as much as a
// reply; after a reply that does not ask, the turn two on is not lifted
// (issue 36).
func TestFollowUpAnswerLifted(t *testing.T) {
	v := testvault.New(t)
	appendTurns(t, v, "s1",
		user("teo", "One very fussy client wants everything in walnut."),
		user("nora", "Is he at least paying on time?"),
		user("teo", "He paid half up front. I finally bought a proper bandsaw."),
		user("nora", "Nice."))
	appendTurns(t, v, "s2",
		user("teo", "Another walnut order came in today."),
		user("nora", "Good for you."),
		user("teo", "A cherry table for the dentist."))
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	hits := explainRecall(t, v, "walnut")
	byText := hitsByText(hits)
	hit, answer := byText["One very fussy client wants everything in walnut."], byText["He paid half up front. I finally bought a proper bandsaw."]
	if hit.Why == nil || answer.Why == nil || answer.Why.NeighbourOf != hit.ID {
		t.Fatalf("the answer to the follow-up question is not lifted by the hit: %+v", hits)
	}
	if want := followUpLift * hit.Why.Text; math.Abs(answer.Why.Neighbour-want) > 1e-9 || answer.Score >= hit.Score {
		t.Errorf("answer %+v score %v, hit %+v score %v: want a lift of %v, below the hit", answer.Why, answer.Score, hit.Why, hit.Score, want)
	}
	// "Good for you." is a hit too (its context holds "walnut") and lifts
	// its own reply; the walnut turn two before must not.
	if h, ok := byText["A cherry table for the dentist."]; ok && h.Why.NeighbourOf == byText["Another walnut order came in today."].ID {
		t.Errorf("a turn two after a hit whose reply does not ask was lifted by it: %+v", h.Why)
	}
}

// A question that names a person lifts that person's next turn after a
// hit, up to namedTurns turns on, past a turn of someone else; a question
// that names no one does not, nor does a turn further on.
func TestNamedPersonsNextTurnLifted(t *testing.T) {
	v := testvault.New(t)
	appendTurns(t, v, "s1",
		user("ines", "I get horribly seasick on every boat."),
		user("ines", "The cruise leaves in March."),
		user("marlon", "Ginger biscuits, and look at the horizon."),
		user("ines", "Thanks."),
		user("ines", "Anything else?"),
		user("marlon", "Stay on deck."))
	if _, err := Reindex(v, nil); err != nil {
		t.Fatal(err)
	}
	named := hitsByText(explainRecall(t, v, "what did marlon say about being seasick"))
	hit, answer := named["I get horribly seasick on every boat."], named["Ginger biscuits, and look at the horizon."]
	if hit.Why == nil || answer.Why == nil || answer.Why.NeighbourOf != hit.ID || answer.Why.Named != "marlon" {
		t.Fatalf("marlon's next turn is not lifted by the hit: %+v", named)
	}
	if want := namedLift * hit.Why.Text; math.Abs(answer.Why.Neighbour-want) > 1e-9 || answer.Score >= hit.Score {
		t.Errorf("answer %+v score %v, hit %+v score %v: want a lift of %v, below the hit", answer.Why, answer.Score, hit.Why, hit.Score, want)
	}
	if h, ok := named["Stay on deck."]; ok && h.Why.NeighbourOf == hit.ID {
		t.Errorf("a turn %d turns after the hit was lifted by it: %+v", namedTurns+2, h.Why)
	}
	plain := hitsByText(explainRecall(t, v, "being seasick"))
	if h, ok := plain["Ginger biscuits, and look at the horizon."]; ok && h.Why.NeighbourOf == plain["I get horribly seasick on every boat."].ID {
		t.Errorf("a question that names no one lifted the turn two after the hit: %+v", h.Why)
	}
}

// hitsByText is hits by their text.
func hitsByText(hits []Hit) map[string]Hit {
	m := map[string]Hit{}
	for _, h := range hits {
		m[h.Text] = h
	}
	return m
}
