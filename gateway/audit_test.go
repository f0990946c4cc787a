package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// readLines decodes a JSONL file, checking that every line is compact JSON.
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: bad line %q: %v", path, sc.Bytes(), err)
		}
		var c bytes.Buffer
		_ = json.Compact(&c, sc.Bytes())
		if c.Len() != len(sc.Bytes()) {
			t.Fatalf("%s: line not compact: %s", path, sc.Bytes())
		}
		out = append(out, m)
	}
	return out
}

func TestAuditLog(t *testing.T) {
	g := start(t, gateway.Options{})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	alice.Expect("system/presence")
	alice.SendText(`{"id":"a1","kind":"chat","to":["bob"],"payload":{"text":"hello"}}`)
	bob.Expect("chat")
	bob.SendText(`{"id":"b1","kind":"mcp/request","payload":{"method":"tools/call"}}`)
	bob.Expect("system/error")
	post(t, g, "bob", "bob-token", `{"id":"h1","kind":"chat","payload":{"text":"via http"}}`)
	alice.ExpectFunc("chat", func(m testutil.Msg) bool { return m.ID() == "h1" })
	g.Stop(t) // a clean shutdown loses nothing

	hist := readLines(t, g.LogPath("envelope-history.jsonl"))
	var received, rejected []map[string]any
	delivered := map[string][]string{}
	var welcomes []map[string]any
	presences := 0
	for _, l := range hist {
		switch l["event"] {
		case "received":
			received = append(received, l)
		case "rejected":
			rejected = append(rejected, l)
		case "delivered":
			// Compact: one grouped line per fan-out.
			if l["participant"] != nil || l["direction"] != "outbound" {
				t.Fatalf("delivered line %v", l)
			}
			if n, ok := l["everyone"].(float64); ok {
				// A presence: to everyone connected but its subject, by number.
				if env, _ := l["envelope"].(map[string]any); env == nil || env["kind"] != "system/presence" || n < 1 || l["recipients"] != nil {
					t.Fatalf("everyone line %v", l)
				}
				presences++
				continue
			}
			if env, _ := l["envelope"].(map[string]any); env != nil && env["kind"] == "system/welcome" {
				welcomes = append(welcomes, l)
			}
			for _, r := range l["recipients"].([]any) {
				delivered[l["id"].(string)] = append(delivered[l["id"].(string)], r.(map[string]any)["participant"].(string))
			}
		}
		if l["space_id"] != "test" || l["timestamp"] == nil {
			t.Fatalf("line %v", l)
		}
	}
	if presences < 2 {
		t.Fatalf("%d presence lines, want the joins of alice and bob", presences)
	}
	// A welcome is recorded without the roster it showed, its size in the
	// metadata: alice's shows the watcher, bob's the watcher and alice.
	var abridged []string
	for _, w := range welcomes {
		p := w["envelope"].(map[string]any)["payload"].(map[string]any)
		if ps, ok := p["participants"].([]any); !ok || len(ps) != 0 {
			t.Fatalf("welcome recorded with its participants: %v", w)
		}
		meta, _ := w["metadata"].(map[string]any)
		ab, _ := meta["abridged"].(map[string]any)
		abridged = append(abridged, fmt.Sprint(ab["participants"]))
	}
	if got := strings.Join(abridged, ","); got != "<nil>,1,2" { // the watcher joined an empty space
		t.Fatalf("abridged welcomes: %s", got)
	}
	byID := map[string]map[string]any{}
	for _, r := range received {
		byID[r["id"].(string)] = r
	}
	a1 := byID["a1"]
	if a1 == nil || a1["participant"] != "alice" || a1["direction"] != "inbound" || a1["transport"] != "websocket" {
		t.Fatalf("received a1: %v", a1)
	}
	if env := a1["envelope"].(map[string]any); env["from"] != "alice" || env["kind"] != "chat" {
		t.Fatalf("received envelope %v", env)
	}
	if h1 := byID["h1"]; h1 == nil || h1["transport"] != "http" {
		t.Fatalf("received h1: %v", h1)
	}
	if got := strings.Join(delivered["a1"], ","); got != "watcher,alice,bob" {
		t.Fatalf("a1 delivered to %s", got)
	}
	if len(rejected) != 1 || rejected[0]["id"] != "b1" || rejected[0]["metadata"].(map[string]any)["reason"] != "capability_violation" {
		t.Fatalf("rejected: %v", rejected)
	}
	// Key order is the reference's, so that grep patterns keep working.
	raw, _ := os.ReadFile(g.LogPath("envelope-history.jsonl"))
	// The compact layout writes the body once, on the received line, and
	// a fan-out's deliveries on one line by id.
	if !bytes.Contains(raw, []byte(`"event":"received","id":"a1","envelope":{"protocol":"mew/v0.4","id":"a1",`)) ||
		!bytes.Contains(raw, []byte(`"event":"delivered","id":"a1","space_id":"test","direction":"outbound","recipients":[{"participant":"watcher","transport":"virtual"},{"participant":"alice","transport":"websocket"},{"participant":"bob","transport":"websocket"}]`)) ||
		!bytes.Contains(raw, []byte(`"to":["bob"]`)) {
		t.Fatalf("unexpected layout:\n%s", raw)
	}
	// The reference's wait_for_delivery grep finds each recipient on it.
	for _, p := range []string{"watcher", "alice", "bob"} {
		re := regexp.MustCompile(`"event":"delivered".*"id":"a1".*"participant":"` + p + `"`)
		if n := len(re.FindAll(raw, -1)); n != 1 {
			t.Errorf("delivery of a1 to %s: %d lines", p, n)
		}
	}
	if bytes.Contains(raw, []byte("alice-token")) || bytes.Contains(raw, []byte("bob-token")) {
		t.Fatal("a token reached the envelope log")
	}

	dec := readLines(t, g.LogPath("capability-decisions.jsonl"))
	found := map[string]string{}
	for _, d := range dec {
		if d["event"] != "capability_check" {
			t.Fatalf("decision %v", d)
		}
		found[d["envelope_id"].(string)] = d["result"].(string) + " " + d["required_capability"].(string)
	}
	if found["a1"] != "allowed chat" || found["b1"] != "denied mcp/request" || found["h1"] != "allowed chat" {
		t.Fatalf("decisions %v", found)
	}
	rawDec, _ := os.ReadFile(g.LogPath("capability-decisions.jsonl"))
	if !bytes.Contains(rawDec, []byte(`"envelope_id":"a1","participant":"alice","space_id":"test","result":"allowed","required_capability":"chat","matched_capability":{"kind":"*"},"matched_source":"static"`)) {
		t.Fatalf("decision layout:\n%s", rawDec)
	}
}

func TestAuditSwitches(t *testing.T) {
	g := testutil.StartGateway(t, `
space: {id: quiet}
participants:
  a: {tokens: [a-token], capabilities: [{kind: chat}]}
gateway_logging:
  capability_decisions: {enabled: false}
`, gateway.Options{Audit: gateway.AuditOptions{ReceivedOnly: true}})
	a, _ := testutil.Join(t, g.WSURL, "a-token")
	a.SendText(`{"id":"q1","kind":"chat","payload":{"text":"x"}}`)
	a.Expect("chat")
	g.Stop(t)
	if _, err := os.Stat(g.LogPath("capability-decisions.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("decisions file exists: %v", err)
	}
	for _, l := range readLines(t, g.LogPath("envelope-history.jsonl")) {
		if l["event"] == "delivered" {
			t.Fatalf("delivered line with AuditReceivedOnly: %v", l)
		}
	}
}
