package bridge

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestFrameGuard: lines within the limit pass unchanged; a longer answer
// becomes an error answer to its id, wherever the id stands in it; a long
// request, notification or batch is dropped; the lines after it pass.
func TestFrameGuard(t *testing.T) {
	big := strings.Repeat("x", 300)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"text":"` + big + `"}}`,
		`{"jsonrpc":"2.0","result":{"text":"` + big + `","id":"no, not this"},"id":"s-3"}`,
		`{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{"x":"` + big + `"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"x":"` + big + `"}}`,
		`[{"jsonrpc":"2.0","id":5,"result":{"x":"` + big + `"}}]`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"` + big + `"}}`,
		`{"jsonrpc":"2.0","id":6,"result":{"ok":true}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"text":"` + big + `"}}`, // the last, without a newline
	}, "\n")
	var drops []dropped
	g := newFrameGuard(io.NopCloser(strings.NewReader(in)), 200, func(d dropped) { drops = append(drops, d) })
	g.r = bufio.NewReaderSize(strings.NewReader(in), 16) // long lines come in many pieces
	out, err := io.ReadAll(g)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	want := []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`id 2 too large`,
		`id "s-3" too large`,
		`{"jsonrpc":"2.0","id":6,"result":{"ok":true}}`,
		`id 7 too large`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines out, want %d:\n%s", len(lines), len(want), out)
	}
	for i, l := range lines {
		if !strings.HasPrefix(want[i], "id ") {
			if l != want[i] {
				t.Errorf("line %d: %s, want %s", i, l, want[i])
			}
			continue
		}
		var r struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, l)
		}
		if got := "id " + string(r.ID) + " too large"; got != want[i] || r.Error.Code != CodeResultTooLarge || !strings.HasPrefix(r.Error.Message, "result too large") {
			t.Errorf("line %d: %s", i, l)
		}
	}
	if len(drops) != 7 || drops[2].response || drops[3].response || drops[4].response || drops[5].id != nil {
		t.Errorf("drops: %+v", drops)
	}
}

// TestBoundedBody: a JSON body is bounded in all, an event stream per
// event; the call's slot learns that its answer went over.
func TestBoundedBody(t *testing.T) {
	read := func(body, contentType string, limit int) (string, bool, error) {
		slot := &rawSlot{}
		b := newBoundedBody(io.NopCloser(strings.NewReader(body)), contentType, limit, slot)
		out, err := io.ReadAll(b)
		return string(out), slot.tooLarge.Load(), err
	}
	events := strings.Repeat("data: 0123456789\n\n", 100) // 1,800 bytes, 18 an event
	if out, over, err := read(events, "text/event-stream", 32); err != nil || over || out != events {
		t.Errorf("small events: %d bytes, over %v, %v", len(out), over, err)
	}
	if _, over, err := read(events, "text/event-stream; charset=utf-8", 16); !errors.Is(err, errHTTPTooLarge) || !over {
		t.Errorf("events over the limit: over %v, %v", over, err)
	}
	crlf := strings.Repeat("data: 0123456789\r\n\r\n", 100)
	if _, over, err := read(crlf, "text/event-stream", 32); err != nil || over {
		t.Errorf("CRLF events: over %v, %v", over, err)
	}
	if _, over, err := read(events, "application/json", 1000); !errors.Is(err, errHTTPTooLarge) || !over {
		t.Errorf("a JSON body over the limit (blank lines do not reset it): over %v, %v", over, err)
	}
	if out, _, err := read(`{"ok":true}`, "application/json", 1000); err != nil || out != `{"ok":true}` {
		t.Errorf("a small JSON body: %q, %v", out, err)
	}
}
