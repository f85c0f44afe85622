package mcp

import (
	"context"
	"encoding/json"
	"testing"
)

// TestOutputSchemasAreObjects: the protocol wants every tool's output
// schema to be of type "object" (structured content is an object).
// Clients on the TypeScript SDK check it when they list the tools and
// reject the whole list otherwise: Gemini CLI then offers none of
// memvault's tools, and the MCP inspector lists nothing
// (e2e_test.go runs both). A handler returning a pointer is
// inferred as ["null", "object"].
func TestOutputSchemasAreObjects(t *testing.T) {
	f := setup(t, Options{}, "")
	res, err := f.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		for what, schema := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			if schema == nil {
				continue
			}
			data, _ := json.Marshal(schema)
			var s struct {
				Type any `json:"type"`
			}
			json.Unmarshal(data, &s)
			if s.Type != "object" {
				t.Errorf("tool %s: %s schema of type %v, want \"object\"", tool.Name, what, s.Type)
			}
		}
	}
}
