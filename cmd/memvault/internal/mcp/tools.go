package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// A tool's schemas are inferred from its Go types (property descriptions
// from the jsonschema tags), then tuned where a type says too little: the
// values of a closed set, a default, a bound. Its arguments are checked
// against the input schema before the handler runs, and its result against
// the output schema before it is sent, so the schemas a client reads are
// the ones the server keeps.

// schemaTypes are the schemas of types inference cannot see into: a JSON
// payload (an event's data) is any JSON value.
func schemaTypes() map[reflect.Type]*jsonschema.Schema {
	return map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[json.RawMessage](): {}}
}

// addTools registers every tool.
func (s *Server) addTools() {
	s.addReadTools()
	s.addWriteTools()
	s.addProtocolTools()
}

// toolSpec describes one tool.
type toolSpec struct {
	name, title, description string
	// writes: the tool changes the vault (one transaction), which may
	// re-render a head a client subscribed to.
	writes bool
	// idempotent: calling it again with the same arguments changes nothing
	// more (the reads).
	idempotent bool
	// tune adjusts the inferred input schema.
	tune func(in *jsonschema.Schema)
}

// addTool registers a tool whose handler takes In and returns Out.
func addTool[In, Out any](s *Server, spec toolSpec, h func(ctx context.Context, req *sdk.CallToolRequest, in In) (Out, error)) {
	opts := &jsonschema.ForOptions{TypeSchemas: schemaTypes()}
	inSchema, err := jsonschema.For[In](opts)
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", spec.name, err))
	}
	if spec.tune != nil {
		spec.tune(inSchema)
	}
	outSchema, err := jsonschema.For[Out](opts)
	if err != nil {
		panic(fmt.Sprintf("tool %s: output schema: %v", spec.name, err))
	}
	// A pointer result is inferred as ["null", "object"]; the protocol
	// wants "object", and clients on the TypeScript SDK reject the whole
	// tool list otherwise (TestOutputSchemasAreObjects). A result is never
	// null: structured checks it against this schema.
	if len(outSchema.Types) == 2 && slices.Contains(outSchema.Types, "null") && slices.Contains(outSchema.Types, "object") {
		outSchema.Type, outSchema.Types = "object", nil
	}
	inResolved, err := inSchema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", spec.name, err))
	}
	outResolved, err := outSchema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: output schema: %v", spec.name, err))
	}
	no := false
	tool := &sdk.Tool{Name: spec.name, Title: spec.title, Description: spec.description,
		InputSchema: inSchema, OutputSchema: outSchema,
		Annotations: &sdk.ToolAnnotations{Title: spec.title, ReadOnlyHint: !spec.writes,
			DestructiveHint: &no, IdempotentHint: spec.idempotent, OpenWorldHint: &no}}
	s.sdk.AddTool(tool, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		in, err := decodeArgs[In](spec.name, req.Params.Arguments, inResolved)
		if err != nil {
			return errorResult(err), nil
		}
		out, err := h(ctx, req, in)
		if err != nil {
			return errorResult(err), nil
		}
		res, err := structured(spec.name, out, outResolved)
		if err != nil {
			return errorResult(err), nil
		}
		if spec.writes {
			s.notifyHeads(ctx, req.Session)
			s.notifyListChanged(ctx, req.Session)
		}
		return res, nil
	})
}

// decodeArgs checks a call's arguments against the tool's input schema,
// fills in the defaults, and decodes them.
func decodeArgs[In any](tool string, raw json.RawMessage, schema *jsonschema.Resolved) (In, error) {
	var in In
	if err := checkUTF8(raw); err != nil {
		return in, err
	}
	args := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return in, badArgs(tool, "want a JSON object of named arguments")
		}
	}
	if err := schema.ApplyDefaults(&args); err != nil {
		return in, badArgs(tool, err.Error())
	}
	if err := schema.Validate(args); err != nil {
		return in, badArgs(tool, schemaProblem(err))
	}
	data, err := json.Marshal(args)
	if err == nil {
		err = json.Unmarshal(data, &in)
	}
	if err != nil {
		return in, badArgs(tool, err.Error())
	}
	return in, nil
}

// schemaProblem words a validation error for a model: the argument it is
// about, then the problem ("tiers[]: enum: nodes does not equal any of: …"),
// without the validator's chain of schema locations.
func schemaProblem(err error) string {
	msg := err.Error()
	loc := ""
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		where, after, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		loc, msg = where, after
	}
	loc = strings.TrimPrefix(loc, "root")
	loc = strings.ReplaceAll(strings.TrimPrefix(loc, "/properties/"), "/properties/", ".")
	loc = strings.ReplaceAll(loc, "/items", "[]")
	if loc == "" {
		return msg
	}
	return loc + ": " + msg
}

func badArgs(tool, why string) error {
	return fault.New(vault.ErrInvalid, "%s: bad arguments: %s", tool, why)
}

// structured is a tool's result: the value as structured content, checked
// against the output schema, and as JSON text for clients that read only
// text.
func structured(tool string, out any, schema *jsonschema.Resolved) (*sdk.CallToolResult, error) {
	data, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%s: encode the result: %w", tool, err)
	}
	var check any
	if err := json.Unmarshal(data, &check); err != nil {
		return nil, fmt.Errorf("%s: encode the result: %w", tool, err)
	}
	if err := schema.Validate(check); err != nil {
		return nil, fmt.Errorf("%s: the result does not match the output schema: %w", tool, err)
	}
	return &sdk.CallToolResult{StructuredContent: json.RawMessage(data),
		Content: []sdk.Content{&sdk.TextContent{Text: string(data)}}}, nil
}

// setEnum restricts a string property (or the items of an array of them)
// to values.
func setEnum(s *jsonschema.Schema, prop string, values []string) {
	p := s.Properties[prop]
	if p.Items != nil {
		p = p.Items
	}
	p.Enum = make([]any, len(values))
	for i, v := range values {
		p.Enum[i] = v
	}
}

// setDefault sets a property's default value.
func setDefault(s *jsonschema.Schema, prop string, value any) {
	data, err := json.Marshal(value)
	if err != nil {
		panic(err)
	}
	s.Properties[prop].Default = data
}

// limitArg gives the argument "limit" its default and its least value.
func limitArg(def int, min float64) func(in *jsonschema.Schema) {
	return func(in *jsonschema.Schema) {
		setDefault(in, "limit", def)
		setMinimum(in, "limit", min)
	}
}

// setMinimum bounds an integer property from below.
func setMinimum(s *jsonschema.Schema, prop string, min float64) {
	s.Properties[prop].Minimum = &min
}
