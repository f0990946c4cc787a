package auditlog_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
	peers := testutil.JoinAll(t, g.WSURL, "alice-token", "bob-token")
	alice, bob := peers[0], peers[1]
	bob.SendText(`{"id":"x1","kind":"mcp/request","payload":{"method":"tools/list"}}`)
	bob.Expect("system/error")
	for i := range 30 {
		alice.SendText(fmt.Sprintf(`{"id":"m%d","kind":"chat","to":["bob"],"payload":{"text":"message %d with some words to fill the line"}}`, i, i))
	}
	bob.ExpectFunc("chat", func(m testutil.Msg) bool { return m.ID() == "m29" })
	g.Stop(t)
	return filepath.Dir(g.LogPath(auditlog.EnvelopeHistory))
}

// sessionHistory runs a session with the default options and returns its
// log directory, the path of its envelope history and the history's
// content.
func sessionHistory(t *testing.T) (dir, path string, data []byte) {
	t.Helper()
	dir = session(t, gateway.Options{})
	path = filepath.Join(dir, auditlog.EnvelopeHistory)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return dir, path, data
}

// delivery is what a delivered record says, as compared across layouts.
type delivery struct {
	id, participant, transport, space, direction, body string
	origin, abridged                                   bool
	everyone                                           int
	at                                                 string // FILE:LINE, base name
}

// deliveries reads every delivered record of dir.
func deliveries(t *testing.T, dir string) (out []delivery, st auditlog.ScanStats) {
	t.Helper()
	st, err := auditlog.Scan(context.Background(), dir, auditlog.EnvelopeHistory, auditlog.ReadOptions{}, func(r *auditlog.Record) error {
		if r.Event == auditlog.Delivered {
			out = append(out, delivery{id: r.ID, participant: r.Participant, transport: r.Transport, space: r.Space,
				direction: r.Direction, body: string(r.Envelope), origin: r.Origin, at: fmt.Sprintf("%s:%d", filepath.Base(r.File), r.Line),
				everyone: r.Everyone, abridged: bytes.Contains(r.Metadata, []byte(`"abridged"`))})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, st
}

// sameDeliveries checks that the deliveries c, read from a compact log, are
// those of r, read from the reference layout of another run of the same
// session: the same recipients, transports and bodies in the same order,
// but for what two runs cannot share (times, the gateway's fresh ids).
func sameDeliveries(t *testing.T, c, r []delivery) {
	t.Helper()
	if len(c) < 60 {
		t.Fatalf("%d compact deliveries", len(c))
	}
	shared, j := 0, 0
	for i := range c {
		if j >= len(r) {
			t.Fatalf("%d compact deliveries, %d reference", len(c), len(r))
		}
		n := 1
		if c[i].participant == auditlog.EveryoneElse {
			n = c[i].everyone // a presence to everyone else: as many reference lines
			if n < 1 || j+n > len(r) {
				t.Fatalf("delivery %d to everyone else: %+v", i, c[i])
			}
		}
		for k := j; k < j+n; k++ {
			shared += sameDelivery(t, i, c[i], r[k], n > 1 || c[i].participant == auditlog.EveryoneElse)
		}
		j += n
	}
	if j != len(r) {
		t.Fatalf("%d compact deliveries cover %d reference ones of %d", len(c), j, len(r))
	}
	if shared != 60 { // the chats, to alice and to bob
		t.Errorf("%d chat deliveries compared, want 60", shared)
	}
}

// abridgedRoster matches a welcome's participants list, which the compact
// layout leaves out.
var abridgedRoster = regexp.MustCompile(`"participants":\[.*\],"active_streams"`)

// sameDelivery compares compact delivery c (number i) with reference
// delivery r, and reports 1 if it is a chat's, compared with its id.
func sameDelivery(t *testing.T, i int, c, r delivery, everyone bool) int {
	t.Helper()
	if (c.participant != r.participant && !everyone) || (c.transport != r.transport && !everyone) || c.space != r.space ||
		c.direction != "outbound" || r.direction != "outbound" || c.origin != r.origin && !everyone ||
		c.body == "" || r.body == "" || !strings.Contains(c.body, `"id":"`+c.id+`"`) {
		t.Fatalf("delivery %d: %+v\nvs %+v", i, c, r)
	}
	cb, rb := blank(c.body, "ts"), blank(r.body, "ts")
	if c.abridged {
		rb = abridgedRoster.ReplaceAllString(rb, `"participants":[],"active_streams"`)
	}
	shared := 0
	if strings.HasPrefix(c.id, "m") && c.id == r.id {
		shared = 1
	} else {
		cb, rb = blank(cb, "id"), blank(rb, "id")
	}
	if cb != rb {
		t.Errorf("delivery %d: %s\nvs %s", i, c.body, r.body)
	}
	return shared
}

// TestCompactReadsBackAsReference: the same session written in the compact
// layout (grouped delivered lines, rotated into several files) and in the
// reference layout reads back into the same delivered records: every
// recipient of a grouped line is a record of its own, at the grouped line's
// place, with the very body the reference layout repeats on its line.
func TestCompactReadsBackAsReference(t *testing.T) {
	t.Parallel()
	compact := session(t, gateway.Options{Audit: gateway.AuditOptions{MaxFileSize: 4096, MaxFiles: -1}})
	reference := session(t, gateway.Options{Audit: gateway.AuditOptions{Format: "reference"}})
	if files, _ := auditlog.Files(compact, auditlog.EnvelopeHistory); len(files) < 3 {
		t.Fatalf("compact log in %d files, want rotation", len(files))
	}
	c, cst := deliveries(t, compact)
	r, _ := deliveries(t, reference)
	if cst.Skipped != 0 {
		t.Fatalf("%d lines skipped: %v", cst.Skipped, cst.Problems)
	}
	sameDeliveries(t, c, r)
	// The chats to alice and bob share a line; fewer lines than records.
	grouped := 0
	for i := 1; i < len(c); i++ {
		if c[i].at == c[i-1].at {
			grouped++
			if c[i].id != c[i-1].id {
				t.Errorf("records %d and %d at %s have ids %s and %s", i-1, i, c[i].at, c[i-1].id, c[i].id)
			}
		}
	}
	if grouped < 30 {
		t.Errorf("%d records shared a line with the one before, want at least the 30 chats'", grouped)
	}
	if cst.Records-cst.Lines != grouped {
		t.Errorf("%d records from %d lines, %d grouped", cst.Records, cst.Lines, grouped)
	}
}

// TestPerRecipientCompactLog: a log of the compact layout before issue 19
// (one delivered line per recipient, written by that gateway with the same
// session as session, in testdata/compact-per-recipient) still verifies and
// reads back as the reference layout does.
func TestPerRecipientCompactLog(t *testing.T) {
	t.Parallel()
	const old = "testdata/compact-per-recipient"
	rep, err := auditlog.Verify(old, auditlog.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Intact() || len(rep.Logs) != 2 || rep.Logs[0].Lines < 60 {
		t.Fatalf("verify: %+v", rep)
	}
	c, st := deliveries(t, old)
	if st.Skipped != 0 || st.Records != st.Lines {
		t.Fatalf("%d records from %d lines, %d skipped", st.Records, st.Lines, st.Skipped)
	}
	r, _ := deliveries(t, session(t, gateway.Options{Audit: gateway.AuditOptions{Format: "reference"}}))
	sameDeliveries(t, c, r)
}

// TestGroupedLineHostile: a grouped delivered line is expanded from what it
// says, whatever its recipients hold; an empty list is skipped and counted,
// not a record without a recipient.
func TestGroupedLineHostile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lines := `{"timestamp":"2026-01-01T00:00:00.000Z","event":"received","id":"a\"b","envelope":{"id":"a\"b","kind":"chat"},"participant":"x"}
{"timestamp":"2026-01-01T00:00:00.000Z","event":"delivered","id":"a\"b","recipients":[{"participant":"q\"uote\\s","transport":"websocket"},{"participant":"猫 😊"},{}],"participant":"ignored"}
{"timestamp":"2026-01-01T00:00:00.000Z","event":"delivered","id":"e","recipients":[]}
{"timestamp":"2026-01-01T00:00:00.000Z","event":"delivered","id":"f","recipients":"alice"}
{"timestamp":"2026-01-01T00:00:00.000Z","event":"received","id":"g","recipients":[{"participant":"not a delivery"}]}
`
	if err := os.WriteFile(filepath.Join(dir, auditlog.EnvelopeHistory), []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	st, err := auditlog.Scan(context.Background(), dir, auditlog.EnvelopeHistory, auditlog.ReadOptions{}, func(r *auditlog.Record) error {
		got = append(got, fmt.Sprintf("%d %s %s %s/%s shared=%v body=%s", r.Line, r.Event, r.ID, r.Participant, r.Transport, r.Shared, r.Envelope))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`1 received a"b x/ shared=false body={"id":"a\"b","kind":"chat"}`,
		`2 delivered a"b q"uote\s/websocket shared=true body={"id":"a\"b","kind":"chat"}`,
		`2 delivered a"b 猫 😊/ shared=true body={"id":"a\"b","kind":"chat"}`,
		`2 delivered a"b / shared=true body={"id":"a\"b","kind":"chat"}`,
		`5 received g / shared=false body=`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st.Skipped != 2 || st.Problems[0].Line != 3 || !strings.Contains(st.Problems[0].Reason, "empty recipients") ||
		st.Problems[1].Line != 4 || !strings.Contains(st.Problems[1].Reason, "not a JSON") {
		t.Errorf("skipped %d: %v", st.Skipped, st.Problems)
	}
}

// TestVerifyGroupedLine: changing one recipient inside a grouped delivered
// line, removing the line or inserting a copy breaks the chain at it.
func TestVerifyGroupedLine(t *testing.T) {
	t.Parallel()
	src, path, orig := sessionHistory(t)
	lines := strings.SplitAfter(string(orig), "\n")
	g := -1 // the last grouped line before the end
	for i, l := range lines[:len(lines)-2] {
		if strings.Contains(l, `"recipients":[{"participant":"alice"`) && strings.Contains(l, `{"participant":"bob"`) {
			g = i
		}
	}
	if g < 0 {
		t.Fatal("no grouped line to alice and bob")
	}
	for _, tc := range []struct {
		name   string
		edit   func([]string) []string
		reason string
	}{
		{"recipient renamed", func(ls []string) []string {
			ls[g] = strings.Replace(ls[g], `{"participant":"bob"`, `{"participant":"eve"`, 1)
			return ls
		}, "the line was altered"},
		{"recipient dropped", func(ls []string) []string {
			ls[g] = strings.Replace(ls[g], `,{"participant":"bob","transport":"websocket"}`, ``, 1)
			return ls
		}, "the line was altered"},
		{"line removed", func(ls []string) []string { return append(ls[:g:g], ls[g+1:]...) }, "line " + fmt.Sprint(g+1) + " was removed"},
		{"line duplicated", func(ls []string) []string { return append(ls[:g+1:g+1], ls[g:]...) }, "inserted"},
	} {
		ls := tc.edit(append([]string(nil), lines...))
		if strings.Join(ls, "") == string(orig) {
			t.Fatalf("%s: nothing changed", tc.name)
		}
		if err := os.WriteFile(path, []byte(strings.Join(ls, "")), 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := auditlog.Verify(src, auditlog.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := rep.Logs[0].Problem
		wantLine := g + 1
		if tc.name == "line duplicated" {
			wantLine = g + 2
		}
		if p == nil || p.Line != wantLine || !strings.Contains(p.Reason, tc.reason) {
			t.Errorf("%s at line %d: verify says %v", tc.name, g+1, p)
		}
	}
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	if rep, err := auditlog.Verify(src, auditlog.VerifyOptions{}); err != nil || !rep.Intact() {
		t.Errorf("restored log: %+v, %v", rep, err)
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
	src, path, b := sessionHistory(t)
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
