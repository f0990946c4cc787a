package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/argcheck"
	"github.com/mew-protocol/mew/protocol"
)

// Elicitation: when the server needs input during a call, the go-sdk calls
// Bridge.elicit — for elicitation/create under a session revision, and for
// each input request of an InputRequiredResult under 2026-07-28 (its
// multi-round-trip middleware then calls again with the answers). The
// bridge asks the space (protocol.KindElicitationRequest, addressed to the
// caller), waits for the first usable elicitation/response from anyone the
// gateway let send one, and answers the server with it. While it waits, the
// call's own timeout is paused: a person is answering, and
// Options.ElicitationTimeout bounds that instead.

const (
	// defaultElicitationTimeout is how long a person has to answer.
	defaultElicitationTimeout = 10 * time.Minute
	// maxOpenElicitations bounds the elicitations waiting at once.
	maxOpenElicitations = 256
	// maxElicitationViolations bounds the violations an elicitation/refused
	// lists.
	maxElicitationViolations = 5
)

// Errors the server is answered with when the space cannot be asked.
var (
	errNoCaller       = errors.New("no call in the space is waiting for this input")
	errCannotElicit   = errors.New("the bridge may not ask the space (it has no capability for elicitation/request)")
	errTooManyElicits = fmt.Errorf("too many elicitations open (%d)", maxOpenElicitations)
)

// elicitation is one question waiting in the space.
type elicitation struct {
	id     string   // the elicitation/request's envelope id
	to     []string // the callers it is addressed to
	mode   string
	schema *argcheck.Schema // the form, nil when it cannot be checked here
	answer chan elicitAnswer
}

// elicitAnswer is the first usable answer.
type elicitAnswer struct {
	by  string
	res *mcp.ElicitResult
}

// elicitTable holds the open elicitations, by envelope id.
type elicitTable struct {
	mu   sync.Mutex
	open map[string]*elicitation
	// answeredBy remembers, for a while, who answered closed ones, so a
	// late answer is told why it was not used.
	answeredBy map[string]string
}

// callKey is the context key of the *call a context serves.
type callKey struct{}

// callers returns the calls the input is for: the one whose context this
// is (2026-07-28: the SDK asks from within the call), else every call in
// flight to the session that asked (a session revision's elicitation/create
// names no call).
func (b *Bridge) callers(ctx context.Context, cs *mcp.ClientSession) []*call {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		return []*call{c}
	}
	b.inflight.mu.Lock()
	defer b.inflight.mu.Unlock()
	var out []*call
	for _, c := range b.inflight.calls {
		if c.session() == cs && c.req.Method != "initialize" && !c.req.IsNotification() {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *call) int { return a.started.Compare(b.started) })
	return out
}

// elicit is the MCP client's elicitation handler.
func (b *Bridge) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	calls := b.callers(ctx, req.Session)
	if len(calls) == 0 {
		b.log.Warn("elicitation refused", "err", errNoCaller)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "mew bridge: " + errNoCaller.Error()}
	}
	p := req.Params
	payload := protocol.ElicitationRequest{
		Mode: p.Mode, Message: p.Message, URL: p.URL, ElicitationID: p.ElicitationID,
		ExpiresAt: time.Now().Add(b.opts.ElicitationTimeout).UTC().Format(time.RFC3339),
	}
	if payload.Mode == "" {
		payload.Mode = protocol.ElicitationModeForm
	}
	e := &elicitation{id: protocol.NewID(), mode: payload.Mode, answer: make(chan elicitAnswer, 1)}
	if p.RequestedSchema != nil {
		raw, err := json.Marshal(p.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("mew bridge: the requested schema: %w", err)
		}
		payload.RequestedSchema = raw
		if s, err := argcheck.Compile("elicitation", raw); err == nil {
			e.schema = s
		}
	}
	if info := b.Status().Server; info != nil {
		payload.Server = info.Name
	}
	var correlation []string
	for _, c := range calls {
		correlation = append(correlation, c.req.Envelope.ID)
		if !slices.Contains(e.to, c.req.From()) {
			e.to = append(e.to, c.req.From())
		}
	}
	payload.Method, payload.Name = calls[0].req.Method, callName(calls[0].req.Params)
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("mew bridge: %w", err)
	}
	if !b.p.CanSendTo(protocol.KindElicitationRequest, e.to, body) {
		b.log.Warn("elicitation refused", "err", errCannotElicit)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "mew bridge: " + errCannotElicit.Error()}
	}
	if !b.elicits.add(e) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mew bridge: " + errTooManyElicits.Error()}
	}
	// A person answers now: the calls' own timeouts wait.
	for _, c := range calls {
		c.pause()
		defer c.resume(b.opts.RequestTimeout)
	}
	sctx, cancel := context.WithTimeout(b.jobs.Context(), answerTimeout)
	err = b.p.Send(sctx, &protocol.Envelope{Kind: protocol.KindElicitationRequest, ID: e.id, To: e.to, CorrelationID: correlation, Payload: body})
	cancel()
	if err != nil {
		b.elicits.close(e.id, "")
		return nil, fmt.Errorf("mew bridge: asking the space: %w", err)
	}
	b.log.Info("elicitation sent to the space", "id", e.id, "to", e.to, "mode", payload.Mode)

	timer := time.NewTimer(b.opts.ElicitationTimeout)
	defer timer.Stop()
	var done protocol.ElicitationDone
	var res *mcp.ElicitResult
	var resErr error
	select {
	case a := <-e.answer:
		done = protocol.ElicitationDone{Status: protocol.ElicitationAnswered, By: a.by, Action: a.res.Action}
		res = a.res
	case <-timer.C:
		b.elicits.close(e.id, "")
		done = protocol.ElicitationDone{Status: protocol.ElicitationExpired, Reason: "nobody answered within " + b.opts.ElicitationTimeout.String()}
		res = &mcp.ElicitResult{Action: protocol.ElicitationCancel}
	case <-ctx.Done():
		b.elicits.close(e.id, "")
		done = protocol.ElicitationDone{Status: protocol.ElicitationCancelled, Reason: "the call ended: " + context.Cause(ctx).Error()}
		resErr = context.Cause(ctx)
	case <-b.jobs.Context().Done():
		b.elicits.close(e.id, "")
		done = protocol.ElicitationDone{Status: protocol.ElicitationCancelled, Reason: errShutdown.Error()}
		resErr = errShutdown
	}
	b.log.Info("elicitation over", "id", e.id, "status", done.Status, "by", done.By, "action", done.Action)
	b.sendElicitation(protocol.KindElicitationDone, e.to, e.id, done)
	return res, resErr
}

// sendElicitation sends an elicitation/done or elicitation/refused.
func (b *Bridge) sendElicitation(kind string, to []string, id string, payload any) {
	body, err := json.Marshal(payload)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
	defer cancel()
	if err := b.p.Send(ctx, &protocol.Envelope{Kind: kind, To: to, CorrelationID: []string{id}, Payload: body}); err != nil {
		b.log.Warn("not sent", "kind", kind, "elicitation", id, "err", err)
	}
}

// onElicitationResponse receives every elicitation/response (on the
// dispatch goroutine). One that answers an open elicitation of this bridge
// with a usable answer settles it; one addressed to the bridge that it
// cannot use is refused, with the reason, to its sender.
func (b *Bridge) onElicitationResponse(env *protocol.Envelope) {
	e, by := b.elicits.find(env.CorrelationID)
	refuse := func(reason string) {
		if e == nil && by == "" && !slices.Contains(env.To, b.p.ID()) {
			return // someone else's elicitation
		}
		b.log.Info("elicitation answer refused", "from", env.From, "correlation", env.CorrelationID, "reason", reason)
		b.goOwned(func(context.Context) {
			b.sendElicitation(protocol.KindElicitationRefused, []string{env.From}, firstOr(env.CorrelationID), protocol.ElicitationRefused{Reason: reason})
		})
	}
	switch {
	case e == nil && by != "":
		refuse("the elicitation was already answered by " + by)
		return
	case e == nil:
		refuse("no open elicitation of " + b.p.ID() + " has that correlation_id")
		return
	}
	res, reason := e.check(env.Payload)
	if reason != "" {
		refuse(reason)
		return
	}
	if !b.elicits.close(e.id, env.From) {
		refuse("the elicitation is already over")
		return
	}
	e.answer <- elicitAnswer{by: env.From, res: res}
}

// check turns an answer's payload into the MCP result, or says why it
// cannot be used.
func (e *elicitation) check(payload json.RawMessage) (*mcp.ElicitResult, string) {
	var in protocol.ElicitationResponse
	if err := json.Unmarshal(payload, &in); err != nil {
		return nil, "the payload is not an elicitation response: " + err.Error()
	}
	res := &mcp.ElicitResult{Action: in.Action}
	switch in.Action {
	case protocol.ElicitationDecline, protocol.ElicitationCancel:
		return res, ""
	case protocol.ElicitationAccept:
	default:
		return nil, fmt.Sprintf("action %q is none of accept, decline, cancel", in.Action)
	}
	content := bytes.TrimSpace(in.Content)
	if e.mode == protocol.ElicitationModeURL {
		if len(content) > 0 && string(content) != "null" {
			return nil, "an answer to a URL elicitation has no content"
		}
		return res, ""
	}
	if len(content) == 0 || string(content) == "null" {
		content = []byte("{}")
	}
	if err := json.Unmarshal(content, &res.Content); err != nil {
		return nil, "content is not a JSON object"
	}
	if e.schema != nil {
		if err := e.schema.Check(content, maxElicitationViolations); err != nil {
			return nil, "content does not fit the form: " + err.Error()
		}
	}
	return res, ""
}

// add opens e; false when too many are open.
func (t *elicitTable) add(e *elicitation) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.open) >= maxOpenElicitations {
		return false
	}
	if t.open == nil {
		t.open = map[string]*elicitation{}
	}
	t.open[e.id] = e
	return true
}

// find returns the open elicitation one of ids names, or who answered
// the closed one it names.
func (t *elicitTable) find(ids []string) (*elicitation, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		if e := t.open[id]; e != nil {
			return e, ""
		}
		if by := t.answeredBy[id]; by != "" {
			return nil, by
		}
	}
	return nil, ""
}

// close removes the elicitation id, noting who answered it ("" when it
// ended otherwise). It reports whether it was open.
func (t *elicitTable) close(id, by string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.open[id]; !ok {
		return false
	}
	delete(t.open, id)
	if by != "" {
		if t.answeredBy == nil || len(t.answeredBy) >= maxOpenElicitations {
			t.answeredBy = map[string]string{} // a memory, not a record
		}
		t.answeredBy[id] = by
	}
	return true
}

// callName is the tool or prompt name, or resource URI, of a request.
func callName(params json.RawMessage) string {
	var in struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	_ = json.Unmarshal(params, &in)
	if in.Name != "" {
		return in.Name
	}
	return in.URI
}

func firstOr(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}
