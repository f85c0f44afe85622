package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MaxMessageBytes bounds one message from the client, its line without the
// newline: 8 MiB holds the largest text a row takes (vault.MaxTextBytes,
// 1 MiB) however a client escapes it (\uXXXX is six bytes a character).
// A longer line is answered with an error and read past in a fixed buffer.
const MaxMessageBytes = 8 << 20

// readBuffer is the reader's buffer: a line is read in pieces of this size.
const readBuffer = 64 << 10

// idPrefix is how much of an oversized line is searched for its id.
const idPrefix = 64 << 10

// maxGlueTries bounds the places a torn line is tried for a message glued
// to its end (gluedMessage).
const maxGlueTries = 32

// nextLine reads the next line, without its newline. over reports a line
// longer than MaxMessageBytes, of which line holds the first idPrefix
// bytes; the rest was read and dropped. err is the end of the input (the
// last line, unterminated, comes with it).
func nextLine(r *bufio.Reader) (line []byte, over bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case over:
		case len(line)+len(chunk) > MaxMessageBytes+1: // +1: the newline
			over = true
			if len(line) < idPrefix {
				line = append(line, chunk[:min(len(chunk), idPrefix-len(line))]...)
			}
			line = line[:min(len(line), idPrefix)]
		default:
			line = grow(line, len(chunk))
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if !over {
			line = bytes.TrimSuffix(line, []byte("\n"))
		}
		return line, over, err
	}
}

// grow makes room for n more bytes in line, doubling as append would but
// never past MaxMessageBytes+1: a line at the limit costs the limit, not
// twice it.
func grow(line []byte, n int) []byte {
	if len(line)+n <= cap(line) {
		return line
	}
	c := min(max(2*cap(line), len(line)+n), MaxMessageBytes+1)
	return append(make([]byte, 0, c), line...)
}

// lineProblem is why a line is not a message the SDK can take, and the
// error answer it gets.
type lineProblem struct {
	code    int64
	message string
	id      any             // the message's id, or nil
	glued   jsonrpc.Message // a whole message at the end of a torn line
}

// decodeLine decodes one line with the SDK's own decoder, or says why it
// is not one message.
func decodeLine(line []byte, over bool) (jsonrpc.Message, *lineProblem) {
	if over {
		return nil, &lineProblem{code: jsonrpc.CodeInvalidRequest, id: idOf(line),
			message: fmt.Sprintf("message over the limit of %d bytes (8 MiB): not read; store large material as a transcript", MaxMessageBytes)}
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	if line[0] == '[' && json.Valid(line) {
		return nil, &lineProblem{code: jsonrpc.CodeInvalidRequest,
			message: "batches are not supported (MCP removed JSON-RPC batching in 2025-06-18): send one message a line"}
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err == nil {
		return msg, nil
	}
	if !json.Valid(line) {
		return nil, &lineProblem{code: jsonrpc.CodeParseError, glued: gluedMessage(line),
			message: "parse error: the line is not JSON: one JSON-RPC message a line"}
	}
	return nil, &lineProblem{code: jsonrpc.CodeInvalidRequest, id: idOf(line),
		message: "invalid request: not a JSON-RPC 2.0 message: " + err.Error()}
}

// gluedMessage finds a whole message at the end of a line that is not
// JSON: a client that died mid-line and a request written after it with no
// newline between make such a line. It tries, from the end, each '{' that
// starts an object ("{" then a key or "}"): the innermost objects of the
// last message fail at once (their parents' closing braces follow), and
// the message's own brace is found after as many tries as it has objects.
// nil when none of the last maxGlueTries such braces starts a message.
func gluedMessage(line []byte) jsonrpc.Message {
	tries := 0
	for i := bytes.LastIndexByte(line, '{'); i > 0 && tries < maxGlueTries; i = bytes.LastIndexByte(line[:i], '{') {
		rest := bytes.TrimLeft(line[i+1:], " \t\r")
		if len(rest) == 0 || (rest[0] != '"' && rest[0] != '}') {
			continue
		}
		tries++
		if !json.Valid(line[i:]) {
			continue
		}
		if msg, err := jsonrpc.DecodeMessage(line[i:]); err == nil {
			return msg
		}
	}
	return nil
}

// idOf is the id a line gives itself, a string or a number, looked for
// among the top-level keys of its first idPrefix bytes (the line may be cut
// short); nil when there is none.
func idOf(line []byte) any {
	dec := json.NewDecoder(bytes.NewReader(line[:min(len(line), idPrefix)]))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return nil
		}
		if key == "id" {
			switch id := tokenOrNil(dec).(type) {
			case string, json.Number:
				return id
			}
			return nil
		}
		if skipValue(dec) != nil {
			return nil
		}
	}
}

func tokenOrNil(dec *json.Decoder) json.Token {
	t, err := dec.Token()
	if err != nil {
		return nil
	}
	return t
}

// skipValue reads past one value.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
