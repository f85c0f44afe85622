// Command fts5q is the SQLite FTS5 anchor of memvault's retrieval benchmark
// (cmd/memvault/bench/recall_test.go). It lives in its own module so that SQLite never
// becomes a dependency of the product.
//
//	fts5q build DB CORPUS.jsonl   index a corpus of {"id","text"} lines
//	fts5q DB QUERY                print the ids of the 10 best messages (bm25)
//
// The table is contentless (an empty content option): like memvault's Bleve index it keeps
// postings with positions and the message id, not the text. Text is split by
// the unicode61 tokenizer and stemmed by porter, as Bleve's English analyzer
// stems; query words are quoted (no FTS5 syntax), English stop words are
// dropped as Bleve drops them, and the rest are OR-ed as a Bleve match query
// does.
package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"

	_ "modernc.org/sqlite"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 4 && os.Args[1] == "build":
		err = build(os.Args[2], os.Args[3])
	case len(os.Args) == 3:
		err = query(os.Args[1], os.Args[2])
	default:
		fmt.Fprintln(os.Stderr, "usage: fts5q build DB CORPUS.jsonl | fts5q DB QUERY")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fts5q:", err)
		os.Exit(1)
	}
}

func build(db, corpus string) error {
	start := time.Now()
	os.Remove(db)
	d, err := sql.Open("sqlite", db)
	if err != nil {
		return err
	}
	defer d.Close()
	for _, s := range []string{
		"PRAGMA journal_mode=OFF", "PRAGMA synchronous=OFF", "PRAGMA page_size=4096",
		"CREATE TABLE ids(rowid INTEGER PRIMARY KEY, id TEXT NOT NULL)",
		"CREATE VIRTUAL TABLE m USING fts5(text, content='', tokenize='porter unicode61')",
	} {
		if _, err := d.Exec(s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	f, err := os.Open(corpus)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	tx, err := d.Begin()
	if err != nil {
		return err
	}
	insID, _ := tx.Prepare("INSERT INTO ids(rowid, id) VALUES(?, ?)")
	insText, _ := tx.Prepare("INSERT INTO m(rowid, text) VALUES(?, ?)")
	var n, bytes int64
	for sc.Scan() {
		var rec struct{ ID, Text string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return fmt.Errorf("line %d: %w", n+1, err)
		}
		n++
		bytes += int64(len(rec.Text))
		if _, err := insID.Exec(n, rec.ID); err != nil {
			return err
		}
		if _, err := insText.Exec(n, rec.Text); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if _, err := d.Exec("INSERT INTO m(m) VALUES('optimize')"); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"messages": n, "text_bytes": bytes,
		"elapsed_ns": time.Since(start).Nanoseconds()})
}

func query(db, q string) error {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if !stop[w] {
			words = append(words, `"`+w+`"`)
		}
	}
	if len(words) == 0 {
		return json.NewEncoder(os.Stdout).Encode([]string{})
	}
	d, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		return err
	}
	defer d.Close()
	rows, err := d.Query(`SELECT ids.id, bm25(m) FROM m JOIN ids ON ids.rowid = m.rowid
		WHERE m MATCH ? ORDER BY bm25(m) LIMIT 10`, strings.Join(words, " OR "))
	if err != nil {
		return err
	}
	defer rows.Close()
	type hit struct {
		ID    string  `json:"id"`
		Score float64 `json:"score"`
	}
	hits := []hit{}
	for rows.Next() {
		var h hit
		if err := rows.Scan(&h.ID, &h.Score); err != nil {
			return err
		}
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(hits)
}

// stop is the English stop list of Bleve's "en" analyzer (Snowball's),
// without the forms with an apostrophe, which the tokenizer splits anyway.
var stop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because been before being
		below between both but by cannot could did do does doing down during each few for from
		further had has have having he her here hers herself him himself his how i if in into is
		it its itself me more most my myself no nor not of off on once only or other ought our
		ours ourselves out over own same she should so some such than that the their theirs them
		themselves then there these they this those through to too under until up very was we were
		what when where which while who whom why with would you your yours yourself yourselves`) {
		stop[w] = true
	}
}
