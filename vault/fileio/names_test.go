package fileio

import (
	"errors"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/fault"
)

func TestCheckName(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "../x", "a/b", `a\b`, ".hidden", "a\x00b", "a\nb", "tab\there",
		strings.Repeat("x", maxNameLen+1), "\xff"} {
		if err := CheckName("name", bad); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("CheckName(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	for _, good := range []string{"default", "claude-code", "3f2a-uuid", "e_01m80", "名前", strings.Repeat("x", maxNameLen)} {
		if err := CheckName("name", good); err != nil {
			t.Errorf("CheckName(%q) = %v", good, err)
		}
	}
}

// TestReadEnd: the window holds the whole last line however long it is,
// torn last line or not, and the size is the file's.
func TestReadEnd(t *testing.T) {
	dir := t.TempDir()
	root := At(dir)
	long := strings.Repeat("x", 40<<10)
	for name, data := range map[string]string{
		"empty":     "",
		"one line":  "a\n",
		"long last": "a\n" + long + "\n",
		"torn":      "a\n" + long + "\nto",
	} {
		if err := root.WriteAtomic(name, []byte(data)); err != nil {
			t.Fatal(err)
		}
		size, tail, err := root.ReadEnd(name)
		if err != nil || size != int64(len(data)) || !strings.HasSuffix(data, string(tail)) {
			t.Fatalf("%s: size %d, %d bytes of tail, %v", name, size, len(tail), err)
		}
		if strings.Contains(data, long) && !strings.Contains(string(tail), "\n"+long+"\n") {
			t.Fatalf("%s: the tail does not hold the last whole line", name)
		}
	}
	if _, _, err := root.ReadEnd("missing"); err == nil {
		t.Fatalf("missing file: %v", err)
	}
}
