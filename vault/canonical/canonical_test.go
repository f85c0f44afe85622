package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestCanonicalJSON(t *testing.T) {
	in := `{"z":1,"a":{"y":[true,null,"<&>"],"b":1.50},"m":"é\n"}`
	v, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, v); err != nil {
		t.Fatal(err)
	}
	want := `{"a":{"b":1.50,"y":[true,null,"<&>"]},"m":"é\n","z":1}`
	if buf.String() != want {
		t.Fatalf("canonical form\n got %s\nwant %s", buf.String(), want)
	}
	// The hash is SHA-256 over exactly that form, so any other implementation
	// can check a ledger line with nothing but a JSON library.
	h, err := Hash(v.(map[string]any))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(want))
	if h != hex.EncodeToString(sum[:]) {
		t.Fatalf("hash %s is not sha256 of the canonical form", h)
	}
}

// TestStringStyles holds the two string escapings apart: the ledger's is
// encoding/json's (U+2028 escaped, invalid UTF-8 replaced), Codex's is
// serde_json's (both written as they are), and everything else is the same
// walk.
func TestStringStyles(t *testing.T) {
	v := map[string]any{"b": "line\u2028sep\t<tab>", "a": []any{int64(-3), true, nil}}
	var ledger, rust bytes.Buffer
	if err := Write(&ledger, v); err != nil {
		t.Fatal(err)
	}
	if err := WriteRust(&rust, v); err != nil {
		t.Fatal(err)
	}
	if want := `{"a":[-3,true,null],"b":"line\u2028sep\t<tab>"}`; ledger.String() != want {
		t.Errorf("ledger style\n got %s\nwant %s", ledger.String(), want)
	}
	if want := "{\"a\":[-3,true,null],\"b\":\"line\u2028sep\\t<tab>\"}"; rust.String() != want {
		t.Errorf("serde style\n got %q\nwant %q", rust.String(), want)
	}
	if err := Write(&ledger, struct{}{}); err == nil {
		t.Error("an unsupported type encoded without an error")
	}
}
