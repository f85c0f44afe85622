package recall

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/embed"
	"github.com/memvault/memvault/vault/embed/embedtest"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
)

const paraphraseQuery = "when did Caroline purchase the car"

// embedVault is a vault with a conversation in which the answer to
// paraphraseQuery shares no word with it, and other turns that do share
// words with it.
func embedVault(t *testing.T) *vault.Vault {
	t.Helper()
	v := testvault.New(t)
	appendTurns(t, v, "s1",
		user("caroline", "we finally acquired a sedan last weekend"),
		agentSays("congratulations, enjoy the drive"))
	appendTurns(t, v, "s2",
		user("mel", "when is the garden party"),
		agentSays("Saturday afternoon at the park"))
	appendTurns(t, v, "s3",
		user("dana", "the car park near the office is full again"),
		agentSays("try the one on Elm street"))
	return v
}

func setEmbed(v *vault.Vault, url, model string) {
	v.Config.Embed.URL, v.Config.Embed.Model, v.Config.Embed.Timeout = url, model, "2s"
}

func hitsJSON(t *testing.T, v *vault.Vault, opts RecallOptions) (string, *RecallResult) {
	t.Helper()
	res, err := Recall(v, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.Hits)
	return string(b), res
}

func transcriptOpts(q string) RecallOptions {
	return RecallOptions{Query: q, AllThreads: true, Tier: TierTranscripts, Limit: 3, Explain: true}
}

// The paraphrase with no word in common is not found by the lexical path
// and is the first hit with [embed], its explanation naming the vector
// ranking alone.
func TestSemanticFindsParaphrase(t *testing.T) {
	srv := embedtest.New(64)
	defer srv.Close()
	v := embedVault(t)
	lexical, _ := hitsJSON(t, v, transcriptOpts(paraphraseQuery))
	if strings.Contains(lexical, "sedan") {
		t.Fatalf("the lexical path found the paraphrase already; the test proves nothing: %s", lexical)
	}
	setEmbed(v, srv.URL(), "fake")
	_, res := hitsJSON(t, v, transcriptOpts(paraphraseQuery))
	at := slices.IndexFunc(res.Hits, func(h Hit) bool { return strings.Contains(h.Text, "sedan") })
	if at < 0 {
		t.Fatalf("semantic recall did not find the paraphrase: %+v (notes %v)", res.Hits, res.Notes)
	}
	why := res.Hits[at].Why
	if why == nil || why.Fusion == nil || !slices.Equal(why.Fusion.Rankings, []string{"vector"}) || why.Fusion.VectorRank != 1 {
		t.Fatalf("explain does not say the hit came from the vector ranking alone, first: %+v", why)
	}
	if f := res.Hits[0].Why.Fusion; !slices.Equal(f.Rankings, []string{"text", "vector"}) {
		t.Fatalf("the hit both rankings hold is not first: %+v", f)
	}
	for _, h := range res.Hits {
		if h.Why.Fusion == nil || len(h.Why.Fusion.Rankings) == 0 {
			t.Fatalf("hit %s has no rankings in its explanation", h.ID)
		}
	}
	// The vectors are cached: a second recall sends only the query.
	before := srv.Requests.Load()
	hitsJSON(t, v, transcriptOpts(paraphraseQuery))
	if got := srv.Requests.Load() - before; got != 1 {
		t.Fatalf("a second recall sent %d requests, want 1 (the query)", got)
	}
}

// Without [embed] no request is sent, and an endpoint that fails in any
// way leaves the output byte-identical to the lexical path's; NoEmbed (a
// hook's recall) sends nothing either.
func TestLexicalOutputUnchanged(t *testing.T) {
	srv := embedtest.New(64)
	defer srv.Close()
	v := embedVault(t)
	want, _ := hitsJSON(t, v, transcriptOpts("car park office"))
	wantAll, _ := hitsJSON(t, v, RecallOptions{Query: "car park office", AllThreads: true})
	if srv.Requests.Load() != 0 {
		t.Fatal("a request without [embed]")
	}
	setEmbed(v, srv.URL(), "fake")
	if got, _ := hitsJSON(t, v, RecallOptions{Query: "car park office", AllThreads: true, NoEmbed: true}); got != wantAll {
		t.Fatalf("NoEmbed changed the output:\n%s\n%s", got, wantAll)
	}
	if srv.Requests.Load() != 0 {
		t.Fatal("a request with NoEmbed")
	}
	for _, mode := range []string{embedtest.Hang, embedtest.Garbage, embedtest.WrongDims, embedtest.Huge,
		embedtest.Redirect, embedtest.Fail, embedtest.Short} {
		srv.SetMode(mode)
		v.Config.Embed.Dimensions = 64 // so that wrong dimensions are caught on the query
		start := time.Now()
		got, res := hitsJSON(t, v, transcriptOpts("car park office"))
		if got != want {
			t.Errorf("%s: the output differs from the lexical path's:\n%s\n%s", mode, got, want)
		}
		if took := time.Since(start); took > recallEmbedBudget+2*time.Second {
			t.Errorf("%s: recall took %s", mode, took)
		}
		if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.HasPrefix(n, "semantic search left out") }) {
			t.Errorf("%s: no note says semantic search was left out: %v", mode, res.Notes)
		}
	}
}

// A secret in a message is redacted before it is sent; a model change
// rebuilds the cache; an api_key in the file is refused, one in the
// environment sent as a bearer token.
func TestEmbedCatchUp(t *testing.T) {
	srv := embedtest.New(32)
	defer srv.Close()
	v := embedVault(t)
	secret := "ghp_" + strings.Repeat("a1B2", 9)
	appendTurns(t, v, "s4", user("dana", "the token is "+secret))
	setEmbed(v, srv.URL(), "fake")
	rep, err := CatchUpEmbeddings(context.Background(), v, 0, false)
	if err != nil || !rep.Done || rep.Embedded != 7 {
		t.Fatalf("catch-up: %+v %v", rep, err)
	}
	for _, text := range srv.Texts() {
		if strings.Contains(text, secret) {
			t.Fatalf("a secret was sent to the endpoint: %q", text)
		}
	}
	if rep, _ := CatchUpEmbeddings(context.Background(), v, 0, false); rep.Requests != 0 || rep.Vectors != 7 {
		t.Fatalf("a second catch-up: %+v", rep)
	}
	v.Config.Embed.Model = "fake-2"
	if rep, _ := CatchUpEmbeddings(context.Background(), v, 0, false); rep.Embedded != 7 || rep.Vectors != 7 {
		t.Fatalf("after a model change: %+v, want every vector asked for again", rep)
	}
	// reindex's rebuild reuses the vectors of unchanged texts.
	if rep, _ := CatchUpEmbeddings(context.Background(), v, 0, true); rep.Requests != 0 || rep.Reused != 7 {
		t.Fatalf("rebuild: %+v", rep)
	}
	v.Config.Embed.APIKey = "sk-live-1234"
	if _, err := CatchUpEmbeddings(context.Background(), v, 0, false); err == nil || !strings.Contains(err.Error(), "api_key") {
		t.Fatalf("an api_key in the file: %v", err)
	}
	v.Config.Embed.APIKey, v.Config.Embed.APIKeyEnv = "", "MEMVAULT_TEST_EMBED_KEY"
	t.Setenv("MEMVAULT_TEST_EMBED_KEY", "k-123")
	appendTurns(t, v, "s5", user("dana", "one more"))
	if _, err := CatchUpEmbeddings(context.Background(), v, 0, false); err != nil {
		t.Fatal(err)
	}
	if auth := srv.Auth(); auth[len(auth)-1] != "Bearer k-123" {
		t.Fatalf("the key from the environment was not sent: %q", auth[len(auth)-1])
	}
	_ = embed.MaxBatch
}

// BenchmarkEmbedCatchUp is the cost of embedding a message with the fake
// endpoint (the model's own time aside): the documents read, redacted,
// sent in batches, checked, quantised and saved.
func BenchmarkEmbedCatchUp(b *testing.B) {
	srv := embedtest.New(768)
	defer srv.Close()
	v := testvault.New(b)
	for s := range 20 {
		var msgs []transcript.Message
		for i := range 100 {
			msgs = append(msgs, transcript.Message{Role: transcript.RoleUser, Speaker: "dana",
				Text: fmt.Sprintf("message %d of session %d: we talked about the garden, the car and the trip to the coast", i, s)})
		}
		appendTurns(b, v, fmt.Sprintf("s%d", s), msgs...)
	}
	setEmbed(v, srv.URL(), "fake")
	b.ResetTimer()
	for range b.N {
		rep, err := CatchUpEmbeddings(context.Background(), v, 0, true)
		if err != nil || rep.Vectors < 2000 {
			b.Fatal(rep, err)
		}
		v.Config.Embed.Model += "x" // nothing reused next round
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*2000), "µs/msg")
}

// A recall whose vectors are caught up reads the cache without writing
// it again (it was rewritten whole by every recall, 77 MB at 100,000
// vectors), and still finds the paraphrase from the vectors read from
// the file; a new turn is embedded and saved by the next recall.
func TestRecallLeavesACaughtUpCacheAlone(t *testing.T) {
	srv := embedtest.New(64)
	defer srv.Close()
	v := embedVault(t)
	setEmbed(v, srv.URL(), "fake")
	hitsJSON(t, v, transcriptOpts(paraphraseQuery))
	path := filepath.Join(v.Root, ".state", embed.StoreName+".bin")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	_, res := hitsJSON(t, v, transcriptOpts(paraphraseQuery))
	if !strings.Contains(fmt.Sprint(res.Hits), "sedan") {
		t.Fatalf("the paraphrase was not found from the cache read back: %+v", res.Hits)
	}
	after, _ := os.Stat(path)
	if !after.ModTime().Equal(old) || !os.SameFile(before, after) {
		t.Fatalf("a recall with nothing to embed wrote the cache again (mtime %v, was %v)", after.ModTime(), old)
	}
	appendTurns(t, v, "s4", user("caroline", "the new automobile is red"))
	_, res = hitsJSON(t, v, transcriptOpts("vehicle colour"))
	after, _ = os.Stat(path)
	if after.ModTime().Equal(old) || !strings.Contains(fmt.Sprint(res.Hits), "automobile") {
		t.Fatalf("a new turn was not embedded and saved: %v, %+v", after.ModTime(), res.Hits)
	}
}
