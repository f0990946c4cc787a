package bridge

import (
	"context"
	"encoding/json"
	"sync"

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

// rawSlotKey is the context key of a *rawSlot.
type rawSlotKey struct{}

// rawSlot receives the raw result of one call.
type rawSlot struct {
	mu     sync.Mutex
	result json.RawMessage
	conn   *rawConn
	id     jsonrpc.ID
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

// rawTransport wraps a transport to fill the rawSlots of calls.
type rawTransport struct{ mcp.Transport }

// Connect implements mcp.Transport.
func (t rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &rawConn{Connection: c, slots: map[jsonrpc.ID]*rawSlot{}}, nil
}

// rawConn is a connection that hands the results of calls to their slots.
type rawConn struct {
	mcp.Connection
	mu    sync.Mutex
	slots map[jsonrpc.ID]*rawSlot
}

// Write notes the slot of a call, from the call's context.
func (c *rawConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
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

// Read hands a successful result to its call's slot.
func (c *rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.mu.Lock()
		s := c.slots[resp.ID]
		delete(c.slots, resp.ID)
		c.mu.Unlock()
		if s != nil && resp.Error == nil && len(resp.Result) > 0 {
			s.mu.Lock()
			s.result = append(json.RawMessage(nil), resp.Result...)
			s.conn = nil
			s.mu.Unlock()
		}
	}
	return msg, err
}
