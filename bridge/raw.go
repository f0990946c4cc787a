package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/mew-protocol/mew/internal/mcpver"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk's client methods decode results into its types, which drop
// members it does not know (a newer revision's, a server's own) and add
// some of their own. So that the space sees what the server answered, a
// stdio session runs over rawTransport, which keeps the result of each
// call made with a rawSlot in its context exactly as the server wrote it.
// (Over HTTP the SDK's connection must stay unwrapped, and results are the
// SDK's re-encoding.)
//
// rawTransport also records the handshake (handshake.go) and settles the
// revision of a pre-release server: the SDK refuses any revision it does
// not list, the reference's servers answer "0.1.0", so the answer to
// initialize is rewritten to the revision mew speaks with the server before
// the SDK reads it.

// rawSlotKey is the context key of a *rawSlot.
type rawSlotKey struct{}

// rawSlot receives the raw result of one call. Over HTTP, tooLarge is set
// when an answer's body on the call's request went over maxFrame
// (boundedBody): the SDK reports that only as a request without answer.
type rawSlot struct {
	mu       sync.Mutex
	result   json.RawMessage
	conn     *rawConn
	id       jsonrpc.ID
	tooLarge atomic.Bool
}

// withRawSlot returns ctx carrying a new slot.
func withRawSlot(ctx context.Context) (context.Context, *rawSlot) {
	s := &rawSlot{}
	return context.WithValue(ctx, rawSlotKey{}, s), s
}

// get returns the raw result, nil if none arrived.
func (s *rawSlot) get() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.result
}

// release forgets the call (its answer may never come).
func (s *rawSlot) release() {
	s.mu.Lock()
	c, id := s.conn, s.id
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		c.mu.Lock()
		delete(c.slots, id)
		c.mu.Unlock()
	}
}

// rawTransport wraps a transport to fill the rawSlots of calls and to
// record the handshake. It is connected once.
type rawTransport struct {
	mcp.Transport
	hs   *handshake
	conn *rawConn // set by Connect
}

// Connect implements mcp.Transport.
func (t *rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.conn = &rawConn{Connection: c, hs: t.hs, slots: map[jsonrpc.ID]*rawSlot{}, handshakes: map[jsonrpc.ID]string{}}
	return t.conn, nil
}

// rawConn is a connection that hands the results of calls to their slots.
type rawConn struct {
	mcp.Connection
	hs         *handshake
	mu         sync.Mutex
	slots      map[jsonrpc.ID]*rawSlot
	handshakes map[jsonrpc.ID]string // the server/discover and initialize calls sent, by id
}

// Write notes the slot of a call, from the call's context, and the ids of
// the handshake's calls.
func (c *rawConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		if req.Method == methodInitialize || req.Method == methodDiscover {
			c.mu.Lock()
			c.handshakes[req.ID] = req.Method
			c.mu.Unlock()
		}
		if s, ok := ctx.Value(rawSlotKey{}).(*rawSlot); ok {
			s.mu.Lock()
			s.conn, s.id = c, req.ID
			s.mu.Unlock()
			c.mu.Lock()
			c.slots[req.ID] = s
			c.mu.Unlock()
		}
	}
	return c.Connection.Write(ctx, msg)
}

// Read hands a successful result to its call's slot, records the answers
// of the handshake, and settles the revision in the answer to initialize.
func (c *rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.mu.Lock()
		method := c.handshakes[resp.ID]
		delete(c.handshakes, resp.ID)
		s := c.slots[resp.ID]
		delete(c.slots, resp.ID)
		c.mu.Unlock()
		if method != "" {
			c.hs.saw(method, resp)
			if method == methodInitialize && resp.Error == nil {
				resp.Result = settleVersion(resp.Result)
			}
		}
		if s != nil && resp.Error == nil && len(resp.Result) > 0 && !inputRequired(resp.Result) {
			s.mu.Lock()
			s.result = append(json.RawMessage(nil), resp.Result...)
			s.conn = nil
			s.mu.Unlock()
		}
	}
	return msg, err
}

// inputRequired reports whether a result is a 2026-07-28
// InputRequiredResult: not the call's answer but a question, which the
// go-sdk answers (elicit.go) before it calls again. The slot keeps the
// answer of the call made again.
func inputRequired(result json.RawMessage) bool {
	if !bytes.Contains(result, []byte(`"input_required"`)) {
		return false // the common case, without decoding
	}
	var r struct {
		ResultType string `json:"resultType"`
	}
	return json.Unmarshal(result, &r) == nil && r.ResultType == "input_required"
}

// settleVersion returns the result of initialize with its protocolVersion
// replaced by the revision mew speaks with the server (mcpver.Accept) when
// that differs: a pre-release server's label becomes mcpver.Oldest, which
// the SDK accepts. A revision mew cannot speak is left as it is, for the
// handshake's verdict to refuse.
func settleVersion(result json.RawMessage) json.RawMessage {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(result, &members); err != nil {
		return result
	}
	var answered string
	_ = json.Unmarshal(members["protocolVersion"], &answered)
	speak, err := mcpver.Accept(answered)
	if err != nil || speak == answered {
		return result
	}
	members["protocolVersion"], _ = json.Marshal(speak)
	out, err := json.Marshal(members)
	if err != nil {
		return result
	}
	return out
}
