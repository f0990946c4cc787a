package participant

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mew-protocol/mew/internal/argcheck"
	"github.com/mew-protocol/mew/internal/mcpver"
	"github.com/mew-protocol/mew/protocol"
)

// MCPProtocolVersion is the MCP revision the participant announces when it
// answers initialize and the client asks for a revision it does not know:
// mcpver.LatestSession, where the revisions mew speaks are listed.
const MCPProtocolVersion = mcpver.LatestSession

// JSON-RPC error codes the participant answers MCP requests with, and that
// an *RPCError may carry.
const (
	CodeParseError       = -32700 // the request's payload is not JSON-RPC
	CodeInvalidRequest   = -32600 // the request has no usable method
	CodeMethodNotFound   = -32601 // the participant does not serve the method
	CodeInvalidParams    = -32602 // bad params, an unknown tool, arguments that fail the tool's schema
	CodeInternalError    = -32603 // a resource read failed
	CodeServerBusy       = -32000 // too many requests are being served at once
	CodeResourceNotFound = -32002 // resources/read of an unknown URI (MCP's code)
)

// ErrAlreadyRegistered: a tool or resource of that name or URI is already
// registered.
var ErrAlreadyRegistered = errors.New("participant: already registered")

const (
	// maxServing bounds the MCP requests served at once; over it, requests
	// are answered with CodeServerBusy straight away.
	maxServing = 1024
	// replyTimeout bounds waiting for room in the send queue for an answer.
	replyTimeout = 10 * time.Second
)

// Tool is an MCP tool the participant serves to the space: it lists it in
// answers to tools/list and runs it for tools/call.
type Tool struct {
	// Name identifies the tool; it is required and unique per participant.
	Name string
	// Description tells callers (and their models) what the tool does.
	Description string
	// InputSchema is the JSON Schema of the arguments (a JSON object; nil
	// means {"type":"object"}). It is compiled when the tool is registered,
	// as draft 2020-12 unless it names another with $schema; references to
	// documents outside the schema are not loaded. Arguments that fail it
	// are refused with CodeInvalidParams before Execute runs.
	InputSchema json.RawMessage
	// OutputSchema, when set, is the JSON Schema of the tool's structured
	// results, listed as the MCP tool's outputSchema; a tool with one
	// answers *ToolResult values whose StructuredContent fits it (the
	// participant does not check them).
	OutputSchema json.RawMessage
	// Execute runs the tool with the call's arguments (a JSON object,
	// {} when the call had none). It runs on a goroutine of its own; ctx is
	// cancelled after Options.RequestTimeout or when the participant
	// closes, and Execute must return then (Close waits for it).
	//
	// The result becomes the MCP tool result: a *ToolResult or ToolResult
	// is sent as it is; a string or []byte becomes one text content; nil
	// becomes an empty content list; anything else is encoded as JSON into
	// one text content and, when it encodes to a JSON object, also sent as
	// structuredContent. So an int 8 answers {"content":[{"type":"text",
	// "text":"8"}]}. A non-nil error answers a result with isError set and
	// the error's text; so does a panic, which is recovered and logged.
	Execute func(ctx context.Context, args json.RawMessage) (any, error)
}

// ToolInfo describes a tool as tools/list lists it.
type ToolInfo struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// ToolResult is the result of an MCP tools/call. IsError marks a tool that
// ran and failed: the error is reported to the caller as content, not as a
// JSON-RPC error.
type ToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// Content is one item of a tool result's content.
type Content struct {
	// Type is "text", "image", "audio" or "resource".
	Type string
	// Text is the text of a text item.
	Text string
	// Data is the base64 data of an image or audio item.
	Data string
	// MimeType is the media type of an image or audio item.
	MimeType string
	// Resource is the embedded resource of a resource item.
	Resource *ResourceContents
}

// MarshalJSON writes the members of the item's type; a text item always
// has its text member, even when it is empty.
func (c Content) MarshalJSON() ([]byte, error) {
	type wire struct {
		Type     string            `json:"type"`
		Text     *string           `json:"text,omitempty"`
		Data     string            `json:"data,omitempty"`
		MimeType string            `json:"mimeType,omitempty"`
		Resource *ResourceContents `json:"resource,omitempty"`
	}
	w := wire{Type: c.Type, Data: c.Data, MimeType: c.MimeType, Resource: c.Resource}
	if c.Type == "text" || c.Text != "" {
		w.Text = &c.Text
	}
	return marshalNoEscape(w)
}

// UnmarshalJSON reads an item of any type.
func (c *Content) UnmarshalJSON(data []byte) error {
	var w struct {
		Type     string            `json:"type"`
		Text     string            `json:"text"`
		Data     string            `json:"data"`
		MimeType string            `json:"mimeType"`
		Resource *ResourceContents `json:"resource"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*c = Content{Type: w.Type, Text: w.Text, Data: w.Data, MimeType: w.MimeType, Resource: w.Resource}
	return nil
}

// TextContent returns a text content item.
func TextContent(text string) Content { return Content{Type: "text", Text: text} }

// TextResult returns a tool result of one text item.
func TextResult(text string) *ToolResult {
	return &ToolResult{Content: []Content{TextContent(text)}}
}

// ErrorResult returns a tool result of one text item with IsError set.
func ErrorResult(text string) *ToolResult {
	return &ToolResult{Content: []Content{TextContent(text)}, IsError: true}
}

// Text returns the text of the result's text items, joined by newlines.
func (r *ToolResult) Text() string {
	var b strings.Builder
	for _, c := range r.Content {
		if c.Type != "text" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c.Text)
	}
	return b.String()
}

// Resource is an MCP resource the participant serves: it lists it in
// answers to resources/list and reads it for resources/read.
type Resource struct {
	// URI identifies the resource; it is required and unique per
	// participant.
	URI string
	// Name is its display name (default: the URI).
	Name string
	// Description says what it holds.
	Description string
	// MimeType is its media type. The contents are sent as text when the
	// type is empty, text/*, or names JSON, XML, YAML or JavaScript, and the
	// bytes are valid UTF-8; otherwise as a base64 blob.
	MimeType string
	// Read returns the contents. It runs on a goroutine of its own with the
	// same context rules as Tool.Execute; an error or a panic answers
	// CodeInternalError.
	Read func(ctx context.Context) ([]byte, error)
}

// ResourceInfo describes a resource as resources/list lists it.
type ResourceInfo struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// ResourceContents is the content of a resource, as resources/read returns
// it and as a resource item of a tool result embeds it: Text or Blob
// (base64) is set.
type ResourceContents struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
}

// toolRegistry holds the participant's own tools and resources. Its mutex
// guards the two sets; the compiled schemas are safe for concurrent
// validation.
type toolRegistry struct {
	mu    sync.RWMutex
	tools ordered[*ownTool]  // by tool name
	res   ordered[*Resource] // by URI

	serving atomic.Int64 // requests being served

	activeMu sync.Mutex
	active   map[string]*servedCall // requests being served, by envelope id
}

// servedCall is a request being served, which its requester may cancel.
type servedCall struct {
	from      string
	rpcID     string // the JSON-RPC id as written
	cancel    context.CancelFunc
	cancelled atomic.Bool
}

// ownTool is a registered tool with its compiled schema.
type ownTool struct {
	info   ToolInfo
	schema *argcheck.Schema
	exec   func(ctx context.Context, args json.RawMessage) (any, error)
}

var defaultInputSchema = json.RawMessage(`{"type":"object"}`)

// compileSchema compiles a tool's input schema.
func compileSchema(name string, raw json.RawMessage) (*argcheck.Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = defaultInputSchema
	}
	return argcheck.Compile(name, raw)
}

// maxViolationsShown bounds the violations an answer lists.
const maxViolationsShown = 8

// validate checks a call's arguments against the tool's schema and says
// what is wrong in one line.
func (t *ownTool) validate(args json.RawMessage) error {
	return t.schema.Check(args, maxViolationsShown)
}

// RegisterTool adds a tool that the participant serves. The name must be
// new and Execute set; the input schema is compiled here, and an invalid
// one is an error. Tools may be registered before or after Connect.
//
// The participant answers the tools/call and tools/list requests addressed
// to it (its id in the envelope's to), with an mcp/response to the
// requester correlated to the request; a fulfilment of a proposal is
// answered the same way. Broadcast requests and requests addressed to
// others are not answered. An unknown tool is a JSON-RPC error
// (CodeInvalidParams, "Tool not found: NAME"), and so are arguments that
// fail the input schema; a tool that fails or panics answers a result with
// isError set.
func (p *Participant) RegisterTool(t Tool) error {
	if t.Name == "" {
		return errors.New("participant: register tool: name is required")
	}
	if t.Execute == nil {
		return fmt.Errorf("participant: register tool %q: Execute is required", t.Name)
	}
	schema, err := compileSchema(t.Name, t.InputSchema)
	if err != nil {
		return fmt.Errorf("participant: register tool %q: input schema: %w", t.Name, err)
	}
	own := &ownTool{
		info:   ToolInfo{Name: t.Name, Description: t.Description, InputSchema: schema.JSON(), OutputSchema: t.OutputSchema},
		schema: schema,
		exec:   t.Execute,
	}
	r := &p.tools
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.tools.add(t.Name, own) {
		return fmt.Errorf("%w: tool %q", ErrAlreadyRegistered, t.Name)
	}
	return nil
}

// UnregisterTool removes a tool and reports whether it was registered.
// Calls already running finish.
func (p *Participant) UnregisterTool(name string) bool {
	r := &p.tools
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tools.remove(name)
}

// Tools returns the participant's own tools in the order they were
// registered, as tools/list lists them.
func (p *Participant) Tools() []ToolInfo {
	r := &p.tools
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]ToolInfo, 0, len(r.tools.order))
	for _, t := range r.tools.all() {
		out = append(out, t.info)
	}
	return out
}

// RegisterResource adds a resource that the participant serves. The URI
// must be new and Read set.
func (p *Participant) RegisterResource(res Resource) error {
	if res.URI == "" {
		return errors.New("participant: register resource: URI is required")
	}
	if res.Read == nil {
		return fmt.Errorf("participant: register resource %q: Read is required", res.URI)
	}
	if res.Name == "" {
		res.Name = res.URI
	}
	r := &p.tools
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.res.add(res.URI, &res) {
		return fmt.Errorf("%w: resource %q", ErrAlreadyRegistered, res.URI)
	}
	return nil
}

// UnregisterResource removes a resource and reports whether it was
// registered.
func (p *Participant) UnregisterResource(uri string) bool {
	r := &p.tools
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.res.remove(uri)
}

// Resources returns the participant's own resources in the order they were
// registered, as resources/list lists them.
func (p *Participant) Resources() []ResourceInfo {
	r := &p.tools
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]ResourceInfo, 0, len(r.res.order))
	for _, res := range r.res.all() {
		out = append(out, res.info())
	}
	return out
}

// ordered is a set of entries by name that lists them in the order they
// were added. Its owner guards it.
type ordered[T any] struct {
	byName map[string]T
	order  []string
}

// add adds v as name unless the name is taken, and reports whether it did.
func (o *ordered[T]) add(name string, v T) bool {
	if _, dup := o.byName[name]; dup {
		return false
	}
	if o.byName == nil {
		o.byName = make(map[string]T)
	}
	o.byName[name] = v
	o.order = append(o.order, name)
	return true
}

// remove removes name and reports whether it was there.
func (o *ordered[T]) remove(name string) bool {
	if _, ok := o.byName[name]; !ok {
		return false
	}
	delete(o.byName, name)
	o.order = slices.DeleteFunc(o.order, func(n string) bool { return n == name })
	return true
}

// get returns the entry of name, or the zero T.
func (o *ordered[T]) get(name string) T { return o.byName[name] }

// all returns the entries in the order they were added.
func (o *ordered[T]) all() []T {
	out := make([]T, 0, len(o.order))
	for _, n := range o.order {
		out = append(out, o.byName[n])
	}
	return out
}

func (r *Resource) info() ResourceInfo {
	return ResourceInfo{URI: r.URI, Name: r.Name, Description: r.Description, MimeType: r.MimeType}
}

func (p *Participant) wireTools() {
	p.c.OnKind(protocol.KindMCPRequest, p.serveRequest)
}

// rpcRequest is the JSON-RPC payload of an mcp/request as the participant
// reads it.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// rpcReply is the payload of an mcp/response. ID is always written (null
// when the request had none).
type rpcReply struct {
	JSONRPC string    `json:"jsonrpc"`
	ID      rpcID     `json:"id"`
	Result  any       `json:"result,omitempty"`
	Error   *RPCError `json:"error,omitempty"`
}

// rpcID is a JSON-RPC id echoed as it came, null when absent.
type rpcID json.RawMessage

func (id rpcID) MarshalJSON() ([]byte, error) {
	if len(id) == 0 {
		return []byte("null"), nil
	}
	return id, nil
}

// servedMethods are the MCP methods the participant answers itself.
var servedMethods = map[string]bool{
	"initialize":               true,
	"ping":                     true,
	"tools/list":               true,
	"tools/call":               true,
	"resources/list":           true,
	"resources/read":           true,
	"resources/templates/list": true,
}

// serveRequest answers the mcp/request envelopes addressed to this
// participant (broadcasts and others' requests are ignored). It runs on the
// dispatch goroutine, so the work happens on a goroutine of its own.
func (p *Participant) serveRequest(env *protocol.Envelope) {
	self := p.ID()
	if self == "" || env.IsBroadcast() || !env.AddressedTo(self) {
		return
	}
	var req rpcRequest
	if err := json.Unmarshal(env.Payload, &req); err != nil {
		p.log.Debug("mcp/request with a payload that is not JSON-RPC", "id", env.ID, "from", env.From, "err", err)
		p.replyNow(env, nil, nil, &RPCError{Code: CodeParseError, Message: "Parse error: payload is not a JSON-RPC request"})
		return
	}
	if req.Method == "notifications/cancelled" {
		p.cancelServed(env, req.Params)
	}
	if !servedMethods[req.Method] || p.delegated[req.Method] {
		p.deliverRequest(env, &req)
		return
	}
	if !p.CanSendTo(protocol.KindMCPResponse, []string{env.From}, nil) {
		p.log.Debug("mcp/request ignored: this participant may not send mcp/response", "id", env.ID, "from", env.From)
		return
	}
	if err := p.controls.allowOutbound(protocol.KindMCPResponse); err != nil {
		p.log.Debug("mcp/request ignored: cannot answer now", "id", env.ID, "from", env.From, "err", err)
		return
	}
	r := &p.tools
	if r.serving.Add(1) > maxServing {
		r.serving.Add(-1)
		p.log.Warn("mcp/request refused: too many requests being served", "id", env.ID, "from", env.From)
		p.replyNow(env, req.ID, nil, &RPCError{Code: CodeServerBusy, Message: "Server busy: too many requests in progress"})
		return
	}
	p.goBackground(func(ctx context.Context) {
		defer r.serving.Add(-1)
		work, cancel := context.WithTimeout(ctx, p.opts.RequestTimeout)
		call := r.track(env, req.ID, cancel)
		result, rpcErr := p.handleMethod(work, env, &req)
		r.untrack(env.ID)
		cancel()
		if call.cancelled.Load() {
			return // the requester withdrew it: MCP answers a cancelled request with nothing
		}
		sendCtx, cancel := context.WithTimeout(ctx, replyTimeout)
		defer cancel()
		p.reply(sendCtx, env, req.ID, result, rpcErr)
	})
}

// track records a request being served.
func (r *toolRegistry) track(env *protocol.Envelope, rpcID json.RawMessage, cancel context.CancelFunc) *servedCall {
	c := &servedCall{from: env.From, rpcID: string(rpcID), cancel: cancel}
	r.activeMu.Lock()
	defer r.activeMu.Unlock()
	if r.active == nil {
		r.active = make(map[string]*servedCall)
	}
	r.active[env.ID] = c
	return c
}

// untrack forgets a request served.
func (r *toolRegistry) untrack(id string) {
	r.activeMu.Lock()
	defer r.activeMu.Unlock()
	delete(r.active, id)
}

// cancelServed stops the requests that an MCP notifications/cancelled
// names, by correlation_id (the request's envelope id) or by
// params.requestId (its JSON-RPC id), among those its sender made.
func (p *Participant) cancelServed(env *protocol.Envelope, params json.RawMessage) {
	var in struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	_ = json.Unmarshal(params, &in)
	r := &p.tools
	r.activeMu.Lock()
	defer r.activeMu.Unlock()
	for id, c := range r.active {
		if c.from != env.From {
			continue
		}
		if env.CorrelatesWith(id) || (len(in.RequestID) > 0 && string(in.RequestID) == c.rpcID) {
			c.cancelled.Store(true)
			c.cancel()
		}
	}
}

// handleMethod answers one served method.
func (p *Participant) handleMethod(ctx context.Context, env *protocol.Envelope, req *rpcRequest) (any, *RPCError) {
	switch req.Method {
	case "initialize":
		return p.initializeResult(req.Params), nil
	case "ping":
		return struct{}{}, nil
	case "tools/list":
		return map[string]any{"tools": p.Tools()}, nil
	case "tools/call":
		return p.callTool(ctx, env, req.Params)
	case "resources/list":
		return map[string]any{"resources": p.Resources()}, nil
	case "resources/templates/list":
		return map[string]any{"resourceTemplates": []any{}}, nil
	case "resources/read":
		return p.readResource(ctx, req.Params)
	}
	return nil, &RPCError{Code: CodeMethodNotFound, Message: "Method not found: " + req.Method}
}

func (p *Participant) initializeResult(params json.RawMessage) any {
	var in struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(params, &in)
	return map[string]any{
		"protocolVersion": mcpver.Negotiate(in.ProtocolVersion),
		"capabilities": map[string]any{
			"tools":     map[string]any{},
			"resources": map[string]any{},
		},
		"serverInfo": map[string]any{"name": p.ID(), "version": protocol.Version},
	}
}

// callTool answers tools/call: validate, execute, convert the result.
func (p *Participant) callTool(ctx context.Context, env *protocol.Envelope, params json.RawMessage) (any, *RPCError) {
	var in struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if len(params) == 0 {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "Invalid params: tools/call needs params"}
	}
	if err := json.Unmarshal(params, &in); err != nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()}
	}
	if in.Name == "" {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "Invalid params: tool name is required"}
	}
	p.tools.mu.RLock()
	t := p.tools.tools.get(in.Name)
	p.tools.mu.RUnlock()
	if t == nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "Tool not found: " + in.Name}
	}
	args := in.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if err := t.validate(args); err != nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "Invalid arguments for tool " + in.Name + ": " + err.Error()}
	}
	ctx = context.WithValue(ctx, toolCallKey{}, env)
	out, panicked, err := runGuarded(func() (any, error) { return t.exec(ctx, args) })
	switch {
	case panicked != nil:
		p.log.Error("tool panicked", "tool", in.Name, "request", env.ID, "from", env.From, "panic", panicked, "stack", string(debug.Stack()))
		return ErrorResult("Tool " + in.Name + " failed: internal error"), nil
	case err != nil:
		return ErrorResult(err.Error()), nil
	}
	res, err := toToolResult(out)
	if err != nil {
		p.log.Error("tool result cannot be encoded", "tool", in.Name, "err", err)
		return ErrorResult("Tool " + in.Name + " returned a result that cannot be encoded"), nil
	}
	return res, nil
}

// toolCallKey is the context key of the envelope a tool's Execute serves.
type toolCallKey struct{}

// ToolCallEnvelope returns the mcp/request envelope (a request, or the
// fulfilment of a proposal) that the tool's Execute given ctx is serving:
// its From says who called, so that a tool can keep what one caller
// started from another. It returns false for any other context.
func ToolCallEnvelope(ctx context.Context) (*protocol.Envelope, bool) {
	env, ok := ctx.Value(toolCallKey{}).(*protocol.Envelope)
	return env, ok && env != nil
}

// runGuarded calls f and recovers a panic.
func runGuarded(f func() (any, error)) (out, panicked any, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicked = r
		}
	}()
	out, err = f()
	return out, nil, err
}

// toToolResult converts what Execute returned (see Tool.Execute).
func toToolResult(v any) (*ToolResult, error) {
	switch x := v.(type) {
	case nil:
		return &ToolResult{Content: []Content{}}, nil
	case *ToolResult:
		if x == nil {
			return &ToolResult{Content: []Content{}}, nil
		}
		r := *x
		if r.Content == nil {
			r.Content = []Content{}
		}
		return &r, nil
	case ToolResult:
		return toToolResult(&x)
	case string:
		return TextResult(x), nil
	case []byte:
		return TextResult(string(x)), nil
	}
	b, err := marshalNoEscape(v)
	if err != nil {
		return nil, err
	}
	r := TextResult(string(b))
	if len(b) > 0 && b[0] == '{' {
		r.StructuredContent = json.RawMessage(b)
	}
	return r, nil
}

// marshalNoEscape encodes v as compact JSON without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return protocol.Marshal(v)
}

// readResource answers resources/read.
func (p *Participant) readResource(ctx context.Context, params json.RawMessage) (any, *RPCError) {
	var in struct {
		URI string `json:"uri"`
	}
	if len(params) == 0 {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "Invalid params: resources/read needs params"}
	}
	if err := json.Unmarshal(params, &in); err != nil || in.URI == "" {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "Invalid params: uri is required"}
	}
	p.tools.mu.RLock()
	res := p.tools.res.get(in.URI)
	p.tools.mu.RUnlock()
	if res == nil {
		return nil, &RPCError{Code: CodeResourceNotFound, Message: "Resource not found: " + in.URI}
	}
	out, panicked, err := runGuarded(func() (any, error) { return res.Read(ctx) })
	if panicked != nil {
		p.log.Error("resource read panicked", "uri", in.URI, "panic", panicked, "stack", string(debug.Stack()))
		return nil, &RPCError{Code: CodeInternalError, Message: "Reading " + in.URI + " failed: internal error"}
	}
	if err != nil {
		return nil, &RPCError{Code: CodeInternalError, Message: "Reading " + in.URI + " failed: " + err.Error()}
	}
	data, _ := out.([]byte)
	c := ResourceContents{URI: res.URI, MimeType: res.MimeType}
	if textual(res.MimeType) && utf8.Valid(data) {
		c.Text = string(data)
	} else {
		c.Blob = base64.StdEncoding.EncodeToString(data)
	}
	return map[string]any{"contents": []ResourceContents{c}}, nil
}

// textual reports whether a media type is sent as text.
func textual(mime string) bool {
	mime = strings.ToLower(strings.TrimSpace(mime))
	if i := strings.IndexByte(mime, ';'); i >= 0 {
		mime = strings.TrimSpace(mime[:i])
	}
	if mime == "" || strings.HasPrefix(mime, "text/") {
		return true
	}
	for _, s := range []string{"json", "xml", "yaml", "javascript", "ecmascript", "toml"} {
		if strings.Contains(mime, s) {
			return true
		}
	}
	return false
}

// reply sends the mcp/response to a request: to the requester, correlated
// to the request's envelope, echoing its JSON-RPC id.
func (p *Participant) reply(ctx context.Context, env *protocol.Envelope, id json.RawMessage, result any, rpcErr *RPCError) {
	out, err := p.response(env, id, result, rpcErr)
	if err != nil {
		p.log.Warn("mcp/response not encoded", "request", env.ID, "err", err)
		return
	}
	if err := p.Send(ctx, out); err != nil {
		p.log.Warn("mcp/response not sent", "request", env.ID, "to", env.From, "err", err)
	}
}

// response is the mcp/response to the request env: to the requester,
// correlated to the request's envelope, echoing its JSON-RPC id. A result
// whose payload would be over Options.MaxReplyBytes is replaced by an
// error that says so: the gateway would refuse the response and the
// caller wait for nothing.
func (p *Participant) response(env *protocol.Envelope, id json.RawMessage, result any, rpcErr *RPCError) (*protocol.Envelope, error) {
	payload := rpcReply{JSONRPC: "2.0", ID: rpcID(id)}
	if rpcErr != nil {
		payload.Error = rpcErr
	} else {
		if result == nil {
			result = struct{}{}
		}
		payload.Result = result
	}
	out, err := protocol.New(protocol.KindMCPResponse, payload)
	if err == nil && len(out.Payload) > p.opts.MaxReplyBytes {
		n := len(out.Payload)
		p.log.Warn("mcp/response too large; answering with an error", "request", env.ID, "bytes", n, "limit", p.opts.MaxReplyBytes)
		out, err = protocol.New(protocol.KindMCPResponse, rpcReply{JSONRPC: "2.0", ID: rpcID(id), Error: &RPCError{Code: CodeInternalError,
			Message: fmt.Sprintf("the result is %d bytes, more than a reply may carry through the gateway (%d): ask for less", n, p.opts.MaxReplyBytes)}})
	}
	if err != nil {
		return nil, fmt.Errorf("participant: %w", err)
	}
	out.To, out.CorrelationID = []string{env.From}, []string{env.ID}
	return out, nil
}

// replyNow sends an error reply from the dispatch goroutine without waiting
// for room in the send queue: if the queue is full, the reply is dropped.
func (p *Participant) replyNow(env *protocol.Envelope, id json.RawMessage, result any, rpcErr *RPCError) {
	ctx, cancel := context.WithCancel(p.ctx)
	cancel() // Send still queues when there is room; it just does not wait
	p.reply(ctx, env, id, result, rpcErr)
}
