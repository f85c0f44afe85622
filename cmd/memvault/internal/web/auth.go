package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"html/template"
	"net/http"
	"net/url"
)

// The security model (docs/WEB.md, "Security"): the server listens on
// 127.0.0.1 only; every request carries the token, in the URL or in the
// cookie the first authorised request sets; the Host header names the
// server (a page of another site that rebinds its name to 127.0.0.1 sends
// its own name, and is refused); every response forbids scripts, styles
// and frames from anywhere but the server; a write needs --write, a
// same-origin POST and the form's CSRF token.

const (
	// tokenLen is the length of a token: 32 random bytes in hex.
	tokenLen = 64
	// cookieName carries the token after the first authorised request.
	cookieName = "memvault_token"
	// csp is every response's Content-Security-Policy.
	csp = "default-src 'none'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; " +
		"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

// NewToken makes a server's token: 32 random bytes in hex.
func NewToken() string {
	b := make([]byte, tokenLen/2)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b)
}

// csrfToken is the token a write form carries: derived from the session
// token, so it proves the form came from a page this server rendered.
func csrfToken(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("memvault web csrf"))
	return hex.EncodeToString(m.Sum(nil))
}

// guard checks the Host header and the token of every request, and sets
// the headers every response carries, before any route runs.
type guard struct {
	s    *Server
	port string
	next http.Handler
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with a form's POST, and the write check refuses it
	// (TestE2EWebBrowser found it); a Referer, which carries the token
	// of the first address, still never leaves for another origin.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if r.Host != "127.0.0.1:"+g.port && r.Host != "localhost:"+g.port {
		forbid(w, "this server answers to 127.0.0.1:"+g.port+" only")
		return
	}
	fromQuery := same(r.URL.Query().Get("token"), g.s.opts.Token)
	fromCookie := false
	if c, err := r.Cookie(cookieName); err == nil {
		fromCookie = same(c.Value, g.s.opts.Token)
	}
	if !fromQuery && !fromCookie {
		forbid(w, "open the address memvault serve printed: it carries the token")
		return
	}
	if !fromCookie {
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: g.s.opts.Token, Path: "/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	g.next.ServeHTTP(w, r)
}

// same compares a presented token with the server's in constant time.
func same(got, want string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// forbid answers 403 with a one-line page.
func forbid(w http.ResponseWriter, why string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusForbidden)
	_, _ = w.Write([]byte("<!doctype html><title>403</title><p>memvault: forbidden: " +
		template.HTMLEscapeString(why) + "</p>\n"))
}

// sameOrigin reports whether a POST came from a page of this server: its
// Origin header is the server's origin, the Host the guard let through.
func sameOrigin(r *http.Request) bool {
	o, err := url.Parse(r.Header.Get("Origin"))
	return err == nil && o.Scheme == "http" && o.Host == r.Host && o.Path == ""
}
