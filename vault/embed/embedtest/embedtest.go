// Package embedtest is a deterministic fake of an OpenAI-compatible
// embeddings endpoint on 127.0.0.1, for the tests of semantic search
// (vault/embed, vault/recall, the binary's in cmd/memvault). Words of a
// synonym group (purchase, buy, acquire…) share a dimension, so a
// paraphrase with no word in common with its question is near it; every
// other word falls in one of the remaining dimensions by its hash. A mode
// makes it misbehave the ways an endpoint can.
package embedtest

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
)

// Modes of misbehaviour.
const (
	OK        = ""
	Hang      = "hang"      // never answers (until the client gives up)
	Garbage   = "garbage"   // 200 with text that is not JSON
	WrongDims = "wrongdims" // vectors one dimension short
	Huge      = "huge"      // a 100 MB answer
	Redirect  = "redirect"  // 307 to another host
	Fail      = "500"       // 500 Internal Server Error
	Short     = "short"     // one vector fewer than texts
)

// Groups are the synonym groups, one dimension each.
var Groups = [][]string{
	{"purchase", "purchased", "buy", "bought", "acquire", "acquired"},
	{"car", "sedan", "vehicle", "automobile"},
	{"physician", "doctor", "gp"},
	{"holiday", "vacation", "trip"},
	{"dog", "puppy", "hound"},
}

// Server is the fake endpoint.
type Server struct {
	*httptest.Server
	Dims     int
	Requests atomic.Int64
	mode     atomic.Value
	delay    atomic.Int64 // ns
	mu       sync.Mutex
	texts    []string
	auth     []string
}

// New starts a fake endpoint answering dims dimensions (at least 16).
func New(dims int) *Server {
	s := &Server{Dims: max(dims, 16)}
	s.mode.Store(OK)
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the endpoint's address.
func (s *Server) URL() string { return s.Server.URL + "/v1/embeddings" }

// SetMode changes how it answers from the next request on.
func (s *Server) SetMode(m string) { s.mode.Store(m) }

// SetDelay makes it wait d before each answer, as a model's own time
// would (benchmarks: what a recall costs beside a real endpoint).
func (s *Server) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

// Texts is every text it was sent, in order.
func (s *Server) Texts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.texts...)
}

// Auth is the Authorization header of every request.
func (s *Server) Auth() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&req); err != nil || req.Model == "" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.texts = append(s.texts, req.Input...)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
	if d := time.Duration(s.delay.Load()); d > 0 {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(d):
		}
	}
	switch s.mode.Load().(string) {
	case Hang:
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
		return
	case Garbage:
		w.Write([]byte("<html>not an embeddings answer</html>"))
		return
	case Huge:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":[{"index":0,"embedding":[`))
		chunk := []byte(strings.Repeat("0.125,", 1<<14))
		for n := 0; n < 100<<20; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		w.Write([]byte("1]}]}"))
		return
	case Redirect:
		http.Redirect(w, r, "http://192.0.2.1:9/v1/embeddings", http.StatusTemporaryRedirect)
		return
	case Fail:
		http.Error(w, "model crashed", http.StatusInternalServerError)
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	var data []item
	dims := s.Dims
	if s.mode.Load().(string) == WrongDims {
		dims--
	}
	for i, t := range req.Input {
		data = append(data, item{Object: "embedding", Index: i, Embedding: Vector(t, dims)})
	}
	if s.mode.Load().(string) == Short && len(data) > 0 {
		data = data[:len(data)-1]
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": req.Model, "data": data})
}

// Vector is the fake model's embedding of text: a count per dimension of
// its words, a synonym group's words in the group's dimension.
func Vector(text string, dims int) []float64 {
	v := make([]float64, dims)
	v[dims-1] = 0.01 // never zero
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) < 3 {
			continue
		}
		v[dim(w, dims)]++
	}
	return v
}

func dim(w string, dims int) int {
	for i, g := range Groups {
		for _, x := range g {
			if x == w {
				return i
			}
		}
	}
	h := fnv.New32a()
	h.Write([]byte(w))
	return len(Groups) + int(h.Sum32()%uint32(dims-len(Groups)-1))
}
