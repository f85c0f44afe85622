package web

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/recall"
)

// pageNames are the pages, each a template under templates/ and the id of
// its <main> (page-<name>).
func pageNames() []string {
	return []string{"overview", "timeline", "session", "sessions", "thread", "node", "head", "continuity", "recall", "error"}
}

// view is what a handler gives the layout: the page, its title, and the
// data its template reads.
type view struct {
	Page   string
	Title  string
	Status int // 0: 200
	Data   any
	// Write and CSRF are the server's, for the forms of --write.
	Write bool
	CSRF  string
	// Version is the vault's version before the page was read (live.go):
	// the page's script asks /live whether it moved on since.
	Version string
}

// parsePages parses every page with the layout around it.
func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageNames() {
		t, err := template.New("layout.html").Funcs(funcs()).ParseFS(templateFS,
			"templates/layout.html", "templates/partials.html", "templates/"+name+".html")
		if err != nil {
			return nil, err
		}
		pages[name] = t
	}
	return pages, nil
}

// page turns a handler into a route: it renders the view the handler
// returns, or the error page with the status the error's class calls for.
func (s *Server) page(fn func(r *http.Request) (*view, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// The version first: a write while the page is read makes the
		// next poll see a newer one, and the page is read again.
		version, _ := liveVersion(s.opts.Root)
		ids := s.loadShortIDs()
		vw, err := fn(withShortIDs(r, ids))
		if err != nil {
			vw = errorView(err)
		}
		if vw.Status == 0 { // an error page is not kept up to date
			vw.Version = version
		}
		s.render(w, vw, ids)
	}
}

// render writes a view, whole: into a buffer first, so that a template
// that fails halfway answers 500 and not half a page.
// The ids it shows are labelled by ids (nil: cut to shortLen).
func (s *Server) render(w http.ResponseWriter, vw *view, ids *shortIDs) {
	vw.Write, vw.CSRF = s.opts.Write, s.csrf
	var buf bytes.Buffer
	t, err := s.pages[vw.Page].Clone()
	if err == nil {
		now := time.Now()
		err = t.Funcs(template.FuncMap{"short": ids.label,
			"when": func(at any) template.HTML { return when(at, now) }}).Execute(&buf, vw)
	}
	if err != nil {
		http.Error(w, "memvault: render "+vw.Page+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if vw.Status != 0 {
		w.WriteHeader(vw.Status)
	}
	_, _ = w.Write(buf.Bytes())
}

// errorView is the error page for err: 404 for what does not exist, 400
// for a malformed request, 503 for a busy vault, else 500.
func errorView(err error) *view {
	status := http.StatusInternalServerError
	title := "Error"
	switch {
	case errors.Is(err, vault.ErrNotFound):
		status, title = http.StatusNotFound, "Not found"
	case errors.Is(err, vault.ErrInvalid):
		status, title = http.StatusBadRequest, "Bad request"
	case errors.Is(err, vault.ErrBusy):
		status, title = http.StatusServiceUnavailable, "Busy"
	}
	data := struct{ Message, Hint string }{Message: err.Error()}
	var fe *fault.Error
	if errors.As(err, &fe) {
		data.Hint = fe.Hint
	}
	return &view{Page: "error", Title: title, Status: status, Data: data}
}

// idRE finds the event and node ids in a line of text.
var idRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b[en]_[0-9a-z]{26}\b`) })

func funcs() template.FuncMap {
	return template.FuncMap{
		"short":        (*shortIDs)(nil).label,                                     // each page's own (render)
		"when":         func(at any) template.HTML { return when(at, time.Now()) }, // the request's time (render)
		"shortSession": shortSession,
		"eventURL":     func(id string) string { return "/timeline?at=" + url.QueryEscape(id) },
		"nodeURL":      func(id string) string { return "/nodes/" + url.PathEscape(id) },
		"sessionURL": func(agent, session string) string {
			return "/sessions/" + url.PathEscape(agent) + "/" + url.PathEscape(session)
		},
		"threadURL":   threadURL,
		"timelineURL": func(thread string) string { return "/timeline?thread=" + url.QueryEscape(thread) },
		"headURL":     headURL,
		"idURL":       idURL,
		"firstLine": func(s string) string {
			s, _, _ = strings.Cut(s, "\n")
			return s
		},
		"add":    func(a, b int) int { return a + b },
		"hitURL": hitURL,
		"count":  count,
	}
}

// count says n things in English: "1 row", "3 rows"; the plural is
// the singular with an s unless given.
func count(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return fmt.Sprintf("%d %s", n, many[0])
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// idURL is the page of an event or node id.
func idURL(id string) string {
	if strings.HasPrefix(id, vault.NodeIDMarker) {
		return "/nodes/" + url.PathEscape(id)
	}
	return "/timeline?at=" + url.QueryEscape(id)
}

// threadURL is a thread's page, /threads/<kind>/<slug>; a key that is
// not one (a hand-edited row's) goes to the timeline filtered to it.
func threadURL(thread string) string {
	th, err := vault.ParseThread(thread)
	if err != nil {
		return "/timeline?thread=" + url.QueryEscape(thread)
	}
	return "/threads/" + url.PathEscape(th.Kind) + "/" + url.PathEscape(th.Slug)
}

// headURL is the page of a head by its path in the vault.
func headURL(path string) string { return "/heads/" + path }

// hitURL is the page of a recall hit: its event or node, else the session
// whose transcript it is in, else the head it is in.
func hitURL(h recall.Hit) string {
	switch {
	case strings.HasPrefix(h.ID, vault.EventIDMarker), strings.HasPrefix(h.ID, vault.NodeIDMarker):
		return idURL(h.ID)
	case h.Session != "" && h.Agent != "":
		return "/sessions/" + url.PathEscape(h.Agent) + "/" + url.PathEscape(h.Session)
	case h.Source.File != "":
		return headURL(h.Source.File)
	}
	return "/timeline"
}
