package bridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/mcpver"
)

// The bridge offers mcpver.Latest: the go-sdk asks server/discover first
// and falls back to initialize at mcpver.LatestSession. The SDK accepts any
// revision it knows, which is not what mew decides (package mcpver): a
// server that answers initialize with the stateless revision (which has no
// initialize) is taken as speaking it, and a server that speaks only
// revisions nobody here knows fails with the SDK's bare error. So the
// bridge watches the two exchanges — on the connection for a command
// (rawConn), in the HTTP responses for a URL (watchTransport) — and judges
// them itself once the SDK is done.

const (
	methodDiscover   = "server/discover"
	methodInitialize = "initialize"
	// maxHandshakeBody bounds what is kept of one HTTP answer to
	// server/discover or initialize.
	maxHandshakeBody = 64 << 10
)

// handshake records what the server answered while the bridge connected.
// Its methods are safe for concurrent use.
type handshake struct {
	mu         sync.Mutex
	discovered bool     // server/discover was answered, with a list or an error that has one
	offered    []string // the revisions it listed
	initSeen   bool     // initialize was answered
	answered   string   // the revision initialize answered
	pending    []*capture
}

// capture is the start of an HTTP answer to one handshake request, kept
// while the SDK reads it.
type capture struct {
	method string
	buf    bytes.Buffer
}

// saw records the server's answer to method (server/discover or
// initialize).
func (h *handshake) saw(method string, resp *jsonrpc.Response) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sawLocked(method, resp)
}

func (h *handshake) sawLocked(method string, resp *jsonrpc.Response) {
	switch method {
	case methodDiscover:
		if resp.Error != nil {
			var we *jsonrpc.Error
			if e, ok := resp.Error.(*jsonrpc.Error); ok {
				we = e
			}
			var data mcp.UnsupportedProtocolVersionData
			if we != nil && we.Code == mcp.CodeUnsupportedProtocolVersion && json.Unmarshal(we.Data, &data) == nil {
				h.discovered, h.offered = true, data.Supported
			}
			return
		}
		var res struct {
			SupportedVersions []string `json:"supportedVersions"`
		}
		if json.Unmarshal(resp.Result, &res) == nil {
			h.discovered, h.offered = true, res.SupportedVersions
		}
	case methodInitialize:
		if resp.Error != nil {
			return
		}
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(resp.Result, &res)
		h.initSeen, h.answered = true, res.ProtocolVersion
	}
}

// verdict judges the handshake once the SDK's Connect returned connectErr
// (nil: it agreed on agreed). It returns the error that refuses the server,
// or connectErr as it is.
func (h *handshake) verdict(connectErr error, agreed string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.pending {
		h.parseLocked(c)
	}
	h.pending = nil
	_, overlap := mcpver.Discover(h.offered)
	switch {
	case h.initSeen && connectErr == nil:
		if _, err := mcpver.Accept(h.answered); err != nil {
			return err
		}
	case connectErr == nil:
		if !mcpver.Speaks(agreed) {
			return fmt.Errorf("%w: the server agreed on %q in server/discover", mcpver.ErrUnsupported, agreed)
		}
	case h.discovered && !overlap && (!h.initSeen || !mcpver.Speaks(h.answered)):
		if h.initSeen {
			return fmt.Errorf("%w (and answered initialize with %q)", mcpver.Refusal(h.offered), h.answered)
		}
		return fmt.Errorf("%w (and initialize failed: %v)", mcpver.Refusal(h.offered), connectErr)
	case h.initSeen:
		if _, err := mcpver.Accept(h.answered); err != nil {
			return err
		}
	}
	return connectErr
}

// parseLocked reads the JSON-RPC answers in an HTTP body kept by c: one
// JSON message, or the data lines of an event stream.
func (h *handshake) parseLocked(c *capture) {
	body := c.buf.Bytes()
	if msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(body)); err == nil {
		if resp, ok := msg.(*jsonrpc.Response); ok {
			h.sawLocked(c.method, resp)
		}
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), maxHandshakeBody)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		if msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(data)); err == nil {
			if resp, ok := msg.(*jsonrpc.Response); ok {
				h.sawLocked(c.method, resp)
			}
		}
	}
}

// watchTransport is the HTTP transport of a URL server's run: it adds the
// configured headers to every request (auth.go), bounds what is read of
// each answer (boundedBody) and, while the bridge
// connects, keeps the answers to server/discover and initialize for the
// handshake.
type watchTransport struct {
	base    http.RoundTripper
	headers http.Header // added to every request; never logged
	hs      *handshake  // nil once connected
	mu      sync.Mutex
}

// stopWatching ends the recording: later requests are only forwarded.
func (t *watchTransport) stopWatching() {
	t.mu.Lock()
	t.hs = nil
	t.mu.Unlock()
}

// RoundTrip implements http.RoundTripper.
func (t *watchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, vs := range t.headers {
			req.Header[k] = vs
		}
	}
	t.mu.Lock()
	hs := t.hs
	t.mu.Unlock()
	method := ""
	if hs != nil && req.Method == http.MethodPost && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			var m struct {
				Method string `json:"method"`
			}
			_ = json.NewDecoder(io.LimitReader(body, maxHandshakeBody)).Decode(&m)
			_ = body.Close()
			if m.Method == methodDiscover || m.Method == methodInitialize {
				method = m.Method
			}
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	slot, _ := req.Context().Value(rawSlotKey{}).(*rawSlot)
	resp.Body = newBoundedBody(resp.Body, resp.Header.Get("Content-Type"), maxFrame, slot)
	if method == "" {
		return resp, nil
	}
	c := &capture{method: method}
	hs.mu.Lock()
	hs.pending = append(hs.pending, c)
	hs.mu.Unlock()
	resp.Body = &teeBody{ReadCloser: resp.Body, hs: hs, c: c}
	return resp, nil
}

// teeBody keeps the start of a body for the handshake while it is read.
type teeBody struct {
	io.ReadCloser
	hs *handshake
	c  *capture
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.hs.mu.Lock()
		if room := maxHandshakeBody - b.c.buf.Len(); room > 0 {
			b.c.buf.Write(p[:min(n, room)])
		}
		b.hs.mu.Unlock()
	}
	return n, err
}
