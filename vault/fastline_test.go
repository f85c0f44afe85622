package vault

import (
	"bytes"
	"reflect"
	"testing"
)

// fastSeeds are lines the fast path must decide exactly as the general
// path: sealed events of every shape, and near misses of each rule the
// fast path relies on.
func fastSeeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, ev := range []*Event{
		{ID: "e_1", TS: "2026-11-22T10:00:00.000Z", Agent: "a", Kind: "fact", Text: "plain"},
		{ID: "e_2", TS: "2026-11-22T10:00:00.000Z", Agent: "a", Kind: "fact", Text: "quote \" back \\ nl \n tab \t <&> \u2028 é \x7f \x01", Thread: "project:x"},
		{ID: "e_3", TS: "2026-11-22T10:00:00.000Z", Agent: "a", Kind: "decision", Text: "x", Data: []byte(`{"z":[1,2.5e-3,{"b":null,"a":true}],"a":"\u00e9"}`), Links: []string{"e_1", "n_2"}},
		{ID: "e_4", TS: "2026-11-22T10:00:00.000Z", Agent: "a", Kind: "fact", Text: "", Links: []string{}, Session: "s", Harness: "h", Source: "src"},
	} {
		line, err := ev.Seal("prevhash")
		if err != nil {
			t.Fatal(err)
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		out = append(out, line)
		// every single-byte change of a sealed line
		for i := range line {
			for _, c := range []byte{' ', '"', '\\', 'x', '0', ',', '}', 0xff} {
				m := bytes.Clone(line)
				m[i] = c
				out = append(out, m)
			}
		}
	}
	out = append(out,
		[]byte(`{"hash":"","id":1}`),
		[]byte(`{"hash":"abc"}`),
		[]byte(`{}`),
		[]byte(`{"ID":"x","hash":"h","id":"y"}`),
		[]byte(`{"hash":"h","id":"x","ſession":"s"}`),
		[]byte(`{"hash":"h","id":"x","id":"y"}`),
		[]byte(`{"data":null,"hash":"h"}`),
		[]byte(`{"hash":"h","links":[null]}`),
		[]byte(`{"hash":"h","links":["a",1]}`),
		[]byte(`{"hash":"h","text":"\u0041"}`),
		[]byte(`{"hash":"h","text":"\/"}`),
		[]byte(`{"hash":"h","text":"\u001f\b\f"}`),
		[]byte(`{"hash":"h","x":01}`),
		[]byte(`{"hash":"h","x":-0.0e+1}`),
		[]byte(`{"hash":"h","x":{"b":1,"a":2}}`),
		[]byte(`{"hash":"h","x":{"a":1,"a":2}}`),
		[]byte(`{"hash":"h"}}`),
		[]byte(`{"hash":"h"} `),
		[]byte(`{"hash":1}`),
		[]byte(`{"hash":"h\u0030"}`),
	)
	return out
}

// checkSameAsGeneral fails when the fast path decides line differently
// from the general one.
func checkSameAsGeneral(t *testing.T, line []byte) {
	t.Helper()
	for _, chainOnly := range []bool{false, true} {
		ev, ok, fast := fastParse(line, chainOnly)
		if !fast {
			continue
		}
		gev, gok, gerr := parseLineGeneral(line)
		if gerr != nil {
			t.Fatalf("%q: the fast path accepts a line the general path refuses: %v", line, gerr)
		}
		if chainOnly { // verification's parse: less the fields it does not read
			gev.Agent, gev.Session, gev.Harness, gev.Thread, gev.Text, gev.Source = "", "", "", "", "", ""
		}
		if ok != gok {
			t.Fatalf("%q (chain only %v): fast hashOK %v, general %v", line, chainOnly, ok, gok)
		}
		if !reflect.DeepEqual(ev, gev) {
			t.Fatalf("%q (chain only %v): fast event\n%#v\ngeneral\n%#v", line, chainOnly, ev, gev)
		}
	}
}

func TestFastLineMatchesGeneral(t *testing.T) {
	fastOnes := 0
	for _, line := range fastSeeds(t) {
		checkSameAsGeneral(t, line)
		if _, ok, fast := fastParseLine(line); fast && ok {
			fastOnes++
		}
	}
	if fastOnes < 4 {
		t.Fatalf("the fast path verified %d of the sealed lines, want every one", fastOnes)
	}
}

// FuzzFastLineMatchesGeneral: on any line the fast path decides, it decides
// as the general path (the event, its fields and whether the hash checks).
func FuzzFastLineMatchesGeneral(f *testing.F) {
	for _, l := range fastSeeds(f) {
		f.Add(l)
	}
	f.Fuzz(checkSameAsGeneral)
}
