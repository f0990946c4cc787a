package bridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A stdio server's message longer than the go-sdk reads (its
// MaxLineLength) ends the SDK's session: the bridge would see the server
// "exit", restart it, and after three such calls give up for everyone.
// frameGuard stands between the server's output and the SDK: a line over
// maxFrame is read to its end and dropped, and an answer to a call is
// replaced by an error answer to that call (CodeResultTooLarge), so the
// caller is told why and the server keeps running.

// CodeResultTooLarge: the server's answer was over the most the bridge
// reads from a stdio server (maxFrame); the server keeps running.
const CodeResultTooLarge = -32011

// maxFrame is the longest line read from a stdio server: the go-sdk's own
// limit, which the SDK is given a little above it so that it never meets
// it.
const maxFrame = mcp.DefaultMaxLineLength

// sdkMaxLine is the MaxLineLength the SDK's transport is given.
const sdkMaxLine = maxFrame + 64<<10

// maxFrameID bounds the bytes of a JSON-RPC id the guard keeps.
const maxFrameID = 256

// dropped is a line the guard did not pass on.
type dropped struct {
	size     int64
	id       json.RawMessage // its JSON-RPC id, nil when none was read
	response bool            // it answers a call (no method)
}

// frameGuard reads a server's output line by line for the SDK.
type frameGuard struct {
	r      *bufio.Reader
	c      io.Closer
	limit  int
	onDrop func(dropped)
	out    []byte // what Read hands out next
	err    error  // the error after out
}

func newFrameGuard(rc io.ReadCloser, limit int, onDrop func(dropped)) *frameGuard {
	return &frameGuard{r: bufio.NewReaderSize(rc, 64<<10), c: rc, limit: limit, onDrop: onDrop}
}

// Close closes the server's output.
func (g *frameGuard) Close() error { return g.c.Close() }

// Read hands out whole lines of at most limit bytes, and the error
// answers that replace longer ones.
func (g *frameGuard) Read(p []byte) (int, error) {
	for len(g.out) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		g.next()
	}
	n := copy(p, g.out)
	g.out = g.out[n:]
	return n, nil
}

// next reads the next line into out, or what stands for it.
func (g *frameGuard) next() {
	var line []byte
	for {
		chunk, err := g.r.ReadSlice('\n')
		if len(line)+len(chunk) > g.limit {
			g.out = g.skip(append(line, chunk...), err)
			return
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		g.out, g.err = line, err
		return
	}
}

// skip reads the rest of a long line that begins with head (err is the
// read's error after head) and returns its replacement.
func (g *frameGuard) skip(head []byte, err error) []byte {
	var sc topScan
	sc.feed(head)
	size := int64(len(head))
	for errors.Is(err, bufio.ErrBufferFull) {
		var chunk []byte
		chunk, err = g.r.ReadSlice('\n')
		sc.feed(chunk)
		size += int64(len(chunk))
	}
	if err != nil {
		g.err = err
	}
	d := dropped{size: size, response: !sc.method && !sc.array}
	if id := bytes.TrimSpace(sc.id); len(id) > 0 && json.Valid(id) && string(id) != "null" {
		d.id = id
	}
	if g.onDrop != nil {
		g.onDrop(d)
	}
	if !d.response || d.id == nil {
		return nil // nobody to answer: dropped, and logged
	}
	msg := fmt.Sprintf("result too large: the MCP server's answer is over %d bytes (%d), the most the bridge reads; the server keeps running", g.limit, size)
	resp, merr := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": d.id, "error": map[string]any{"code": CodeResultTooLarge, "message": msg}})
	if merr != nil {
		return nil
	}
	return append(resp, '\n')
}

// topScan follows a JSON object byte by byte, keeping what the guard
// needs of its top level: the id's raw value, and whether it names a
// method (a request or notification, not an answer). It never holds
// more than a key and an id.
type topScan struct {
	depth     int
	inStr     bool
	esc       bool
	expectKey bool // at depth 1, the next string is a key
	inKey     bool // reading a key
	key       []byte
	inID      bool // reading the value of "id"
	id        []byte
	method    bool
	array     bool // the line is a batch
}

func (s *topScan) feed(b []byte) {
	for _, c := range b {
		s.byte(c)
	}
}

func (s *topScan) byte(c byte) {
	if s.inID && len(s.id) < maxFrameID && (s.inStr || (s.depth == 1 && c != ',' && c != '}') || s.depth > 1) {
		s.id = append(s.id, c)
	}
	if s.inStr {
		switch {
		case s.esc:
			s.esc = false
		case c == '\\':
			s.esc = true
		case c == '"':
			s.inStr = false
			if s.inKey {
				s.inKey = false
				return
			}
		}
		if s.inKey && len(s.key) < 16 {
			s.key = append(s.key, c)
		}
		return
	}
	switch c {
	case '"':
		s.inStr = true
		if s.depth == 1 && s.expectKey {
			s.inKey, s.key = true, s.key[:0]
		}
	case '{', '[':
		if s.depth == 0 && c == '[' {
			s.array = true
		}
		s.depth++
		if s.depth == 1 {
			s.expectKey = true
		}
	case '}', ']':
		s.depth--
		if s.depth < 1 {
			s.inID = false
		}
	case ':':
		if s.depth == 1 {
			s.expectKey = false
			switch string(s.key) {
			case "id":
				s.inID, s.id = true, s.id[:0]
			case "method":
				s.method = true
			}
		}
	case ',':
		if s.depth == 1 {
			s.expectKey, s.inID = true, false
		}
	}
}

// An HTTP server's answer is bounded as a stdio server's line is: a JSON
// body, or one event of an event stream, over maxFrame bytes ends the
// body's reading with errHTTPTooLarge, so that the SDK never holds more
// than that of one message and the call fails with the reason.

// errHTTPTooLarge ends the reading of an HTTP answer over maxFrame.
var errHTTPTooLarge = fmt.Errorf("result too large: the MCP server's answer is over %d bytes, the most the bridge reads", maxFrame)

// boundedBody reads an HTTP response's body, failing past limit bytes in
// all (a JSON body) or in one event (an event stream, whose events end
// with a blank line).
type boundedBody struct {
	io.ReadCloser
	slot   *rawSlot // the call's, told when the body goes over; may be nil
	limit  int
	stream bool
	run    int  // bytes since the body's start, or the last event's end
	nl     bool // the last byte was a newline (a '\r' before it aside)
}

func newBoundedBody(body io.ReadCloser, contentType string, limit int, slot *rawSlot) *boundedBody {
	stream := strings.HasPrefix(strings.ToLower(strings.TrimSpace(contentType)), "text/event-stream")
	return &boundedBody{ReadCloser: body, limit: limit, stream: stream, slot: slot}
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.run > b.limit {
		return 0, errHTTPTooLarge
	}
	// Past the limit, run stays over it: the next Read fails at once.
	n, err := b.ReadCloser.Read(p)
	over := false
	if !b.stream {
		b.run += n
		over = b.run > b.limit
	} else {
		for _, c := range p[:n] {
			switch {
			case c == '\n' && b.nl:
				b.run = -1 // the event ends with this byte
			case c == '\n':
				b.nl = true
			case c != '\r':
				b.nl = false
			}
			b.run++
			if b.run > b.limit {
				over = true
				break
			}
		}
	}
	if over {
		if b.slot != nil {
			b.slot.tooLarge.Store(true)
		}
		return n, errHTTPTooLarge
	}
	return n, err
}
