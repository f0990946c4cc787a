package auditlog_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/auditlog"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

const space = `
space: {id: readback}
participants:
  alice: {tokens: [alice-token], capabilities: [{kind: chat}]}
  bob: {tokens: [bob-token], capabilities: [{kind: chat}]}
`

// session runs the same short session on a real gateway with the given
// audit options and returns the log directory.
func session(t *testing.T, opts gateway.Options) string {
	t.Helper()
	g := testutil.StartGateway(t, space, opts)
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	alice.Expect("system/presence")
	bob.SendText(`{"id":"x1","kind":"mcp/request","payload":{"method":"tools/list"}}`)
	bob.Expect("system/error")
	for i := range 30 {
		alice.SendText(fmt.Sprintf(`{"id":"m%d","kind":"chat","to":["bob"],"payload":{"text":"message %d with some words to fill the line"}}`, i, i))
	}
	bob.ExpectFunc("chat", func(m testutil.Msg) bool { return m.ID() == "m29" })
	g.Stop(t)
	return filepath.Dir(g.LogPath(auditlog.EnvelopeHistory))
}

type delivery struct{ id, participant, body string }

// deliveries reads every delivered line of dir as (id, recipient, body).
func deliveries(t *testing.T, dir string) (out []delivery, st auditlog.ScanStats) {
	t.Helper()
	st, err := auditlog.Scan(context.Background(), dir, auditlog.EnvelopeHistory, auditlog.ReadOptions{}, func(r *auditlog.Record) error {
		if r.Event == auditlog.Delivered {
			out = append(out, delivery{r.ID, r.Participant, string(r.Envelope)})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, st
}

// TestCompactReadsBackAsReference: the same session written in the compact
// layout (rotated into several files) and in the reference layout reads
// back into the same delivered envelopes: every compact delivered line gets
// the very body the reference layout repeats on it.
func TestCompactReadsBackAsReference(t *testing.T) {
	t.Parallel()
	compact := session(t, gateway.Options{AuditMaxFileSize: 4096, AuditMaxFiles: -1})
	reference := session(t, gateway.Options{AuditFormat: "reference"})
	if files, _ := auditlog.Files(compact, auditlog.EnvelopeHistory); len(files) < 3 {
		t.Fatalf("compact log in %d files, want rotation", len(files))
	}
	c, cst := deliveries(t, compact)
	r, _ := deliveries(t, reference)
	if cst.Skipped != 0 || len(c) != len(r) || len(c) < 60 {
		t.Fatalf("%d compact deliveries (%d skipped), %d reference", len(c), cst.Skipped, len(r))
	}
	// Gateway-made envelopes (welcome, presence, error) have fresh ids and
	// times in each run; chats are the same bytes but for ts.
	shared := 0
	for i := range c {
		if c[i].participant != r[i].participant || c[i].body == "" || r[i].body == "" ||
			!strings.Contains(c[i].body, `"id":"`+c[i].id+`"`) {
			t.Fatalf("delivery %d: %v vs %v", i, c[i], r[i])
		}
		// The gateway's own envelopes get a fresh id in each run.
		cb, rb := blank(c[i].body, "ts"), blank(r[i].body, "ts")
		if strings.HasPrefix(c[i].id, "m") && c[i].id == r[i].id {
			shared++
		} else {
			cb, rb = blank(cb, "id"), blank(rb, "id")
		}
		if cb != rb {
			t.Errorf("delivery %d: %s\nvs %s", i, c[i].body, r[i].body)
		}
	}
	if shared != 60 { // the chats, to alice and to bob
		t.Errorf("%d chat deliveries compared, want 60", shared)
	}
}

// blank empties the first string member key of an envelope: what two runs
// of the same session cannot share (ts, the gateway's fresh ids).
func blank(body, key string) string {
	k := `"` + key + `":"`
	i := strings.Index(body, k)
	if i < 0 {
		return body
	}
	j := strings.Index(body[i+len(k):], `"`)
	return body[:i+len(k)] + body[i+len(k)+j:]
}

// TestHostileLog: a log with a huge line, broken JSON, a cut last line and
// a forged line is read without holding the huge line, with the broken
// lines skipped and counted; verify names the first broken line.
func TestHostileLog(t *testing.T) {
	t.Parallel()
	src := session(t, gateway.Options{})
	path := filepath.Join(src, auditlog.EnvelopeHistory)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	huge := append(append([]byte(`{"event":"received","id":"huge","envelope":{"x":"`), bytes.Repeat([]byte("A"), 3<<20)...), "\"}}\n"...)
	forged := []byte(`{"timestamp":"2026-01-01T00:00:00.000Z","event":"received","id":"forged","envelope":{"protocol":"mew/v0.4","id":"forged","from":"alice","kind":"chat","payload":{"text":"I never said this"}},"participant":"alice","space_id":"readback","chain":"99:00000000000000000000000000000000"}` + "\n")
	var out []byte
	out = append(out, bytes.Join(lines[:5], nil)...)
	out = append(out, huge...)
	out = append(out, "{not json\n"...)
	out = append(out, forged...)
	out = append(out, bytes.Join(lines[5:], nil)...)
	out = append(out, `{"event":"delivered","id":"cut`...)
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	const limit = 1 << 20
	var ids []string
	st, err := auditlog.Scan(context.Background(), src, auditlog.EnvelopeHistory, auditlog.ReadOptions{MaxLineSize: limit}, func(r *auditlog.Record) error {
		if len(r.Envelope) > limit {
			t.Errorf("a record of %d bytes got through", len(r.Envelope))
		}
		ids = append(ids, r.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Skipped != 3 || len(st.Problems) != 3 || !strings.Contains(st.Problems[0].Reason, "longer than") ||
		!strings.Contains(st.Problems[1].Reason, "not a JSON") || !strings.Contains(st.Problems[2].Reason, "cut off") {
		t.Errorf("skipped %d: %v", st.Skipped, st.Problems)
	}
	if !bytes.Contains([]byte(strings.Join(ids, ",")), []byte("m29")) {
		t.Errorf("the records after the damage were not read: %v", ids)
	}
	rep, err := auditlog.Verify(src, auditlog.VerifyOptions{MaxLineSize: limit})
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Logs[0].Problem; p == nil || p.Line != 6 || !strings.Contains(p.Reason, "longer than") {
		t.Errorf("verify: %v", p)
	}
}

// TestQuery: each selector of a Query picks the records it names.
func TestQuery(t *testing.T) {
	t.Parallel()
	dir := session(t, gateway.Options{})
	count := func(q auditlog.Query) int {
		n := 0
		for _, name := range []string{auditlog.EnvelopeHistory, auditlog.CapabilityDecisions} {
			if _, err := auditlog.Scan(context.Background(), dir, name, auditlog.ReadOptions{}, func(r *auditlog.Record) error {
				if q.Match(r) {
					n++
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	recv := []string{auditlog.Received}
	for _, tc := range []struct {
		name string
		q    auditlog.Query
		want int
	}{
		{"received chats", auditlog.Query{Kind: "chat", Events: recv}, 30},
		{"mcp prefix", auditlog.Query{Kind: "mcp/*", Events: []string{auditlog.Rejected}}, 1},
		{"one id, every line", auditlog.Query{ID: "m3"}, 4}, // received, 2 delivered, 1 decision
		{"text", auditlog.Query{Text: "MESSAGE 17", Events: recv}, 1},
		{"participant bob sent", auditlog.Query{Participant: "bob", Events: []string{auditlog.Rejected}}, 1},
		{"to bob", auditlog.Query{Participant: "bob", Kind: "chat", Events: recv}, 30},
		{"denied decisions", auditlog.Query{Events: []string{auditlog.CapabilityCheck}, Kind: "mcp/request"}, 1},
		{"other space", auditlog.Query{Space: "elsewhere"}, 0},
	} {
		if got := count(tc.q); got != tc.want {
			t.Errorf("%s: %d records, want %d", tc.name, got, tc.want)
		}
	}
}
