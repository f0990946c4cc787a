package auditlog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/auditlog"
)

// logDir writes audit log lines the way the gateway lays them out, and
// rotates and prunes its files, for a Follower to follow.
type logDir struct {
	t   testing.TB
	dir string
	at  time.Time // the time of the next line
	n   int       // rotations so far, for unique names
}

func newLogDir(t testing.TB) *logDir {
	return &logDir{t: t, dir: t.TempDir(), at: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)}
}

// append writes raw text to a log, as is: a line without its '\n' is one
// the writer has not finished.
func (d *logDir) append(name, text string) {
	d.t.Helper()
	f, err := os.OpenFile(filepath.Join(d.dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		d.t.Fatal(err)
	}
}

func (d *logDir) stamp() string {
	d.at = d.at.Add(time.Millisecond)
	return d.at.Format("2006-01-02T15:04:05.000Z")
}

// envelope logs a received envelope and its grouped delivered line.
func (d *logDir) envelope(id, from, kind string, to []string, correlation, context, payload string) {
	d.t.Helper()
	env := map[string]any{"protocol": "mew/v0.4", "id": id, "ts": "2026-05-01T10:00:00.000Z", "from": from, "kind": kind, "payload": json.RawMessage(payload)}
	if len(to) > 0 {
		env["to"] = to
	}
	if correlation != "" {
		env["correlation_id"] = []string{correlation}
	}
	if context != "" {
		env["context"] = context
	}
	body, _ := json.Marshal(env)
	ts := d.stamp()
	d.append(auditlog.EnvelopeHistory, fmt.Sprintf(`{"timestamp":%q,"event":"received","id":%q,"envelope":%s,"participant":%q,"space_id":"s","direction":"inbound","transport":"websocket"}`+"\n", ts, id, body, from))
	rcpts := make([]string, 0, len(to))
	for _, p := range to {
		rcpts = append(rcpts, fmt.Sprintf(`{"participant":%q,"transport":"websocket"}`, p))
	}
	if len(rcpts) > 0 {
		d.append(auditlog.EnvelopeHistory, fmt.Sprintf(`{"timestamp":%q,"event":"delivered","id":%q,"space_id":"s","direction":"outbound","recipients":[%s]}`+"\n", ts, id, strings.Join(rcpts, ",")))
	}
}

// check logs a capability check of envelope id.
func (d *logDir) check(id, who, kind string) {
	d.append(auditlog.CapabilityDecisions, fmt.Sprintf(`{"timestamp":%q,"event":"capability_check","envelope_id":%q,"participant":%q,"space_id":"s","result":"allowed","required_capability":%q,"matched_capability":{"kind":"*"},"matched_source":"static","metadata":{"source":"websocket"}}`+"\n", d.stamp(), id, who, kind))
}

// granted logs a pattern granted by grant id.
func (d *logDir) granted(id, by, to string) {
	d.append(auditlog.CapabilityDecisions, fmt.Sprintf(`{"timestamp":%q,"event":"capability_check","envelope_id":%q,"participant":%q,"space_id":"s","result":"allowed","required_capability":"capability/grant","matched_capability":{"kind":"mcp/request"},"matched_source":"dynamic","metadata":{"source":"capability/grant","granted_by":%q,"recipient":%q}}`+"\n", d.stamp(), id, to, by, to))
}

// rotate moves the current file of a log aside, as the writer does.
func (d *logDir) rotate(name string) {
	d.t.Helper()
	d.n++
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(d.n) * time.Millisecond)
	rotated := strings.TrimSuffix(name, ".jsonl") + "." + at.Format("20060102T150405.000Z") + ".jsonl"
	if err := os.Rename(filepath.Join(d.dir, name), filepath.Join(d.dir, rotated)); err != nil {
		d.t.Fatal(err)
	}
}

// prune deletes the oldest rotated file of a log.
func (d *logDir) prune(name string) {
	d.t.Helper()
	files, err := auditlog.Files(d.dir, name)
	if err != nil || len(files) < 2 {
		d.t.Fatalf("nothing to prune: %v %v", files, err)
	}
	if err := os.Remove(files[0]); err != nil {
		d.t.Fatal(err)
	}
}

// dump prints what an index knows: every entry with its place,
// recipients and checks, every grant, and the lineage of every envelope.
func dump(t *testing.T, ix *auditlog.Index) string {
	t.Helper()
	var b strings.Builder
	for _, e := range ix.Entries() {
		fmt.Fprintf(&b, "%s %s:%d %s rcpt=%v", e.Env.ID, filepath.Base(e.Record.File), e.Record.Line, e.Record.Event, e.Recipients)
		for _, d := range e.Decisions {
			fmt.Fprintf(&b, " check@%s:%d", filepath.Base(d.File), d.Line)
		}
		b.WriteString("\n")
		if g := ix.GrantOf(e.Env.ID); g != nil {
			fmt.Fprintf(&b, "  grant by=%s to=%s patterns=%d expires=%v\n", g.By, g.To, len(g.Patterns), g.ExpiresAt)
		}
	}
	for _, e := range ix.Entries() {
		root, err := ix.Lineage(e.Env.ID)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(root)
		b.Write(js)
		b.WriteString("\n")
	}
	return b.String()
}

// same checks that the follower's index says what a full read says.
func same(t *testing.T, f *auditlog.Follower, dir, step string) *auditlog.Index {
	t.Helper()
	got, err := f.Update(context.Background())
	if err != nil {
		t.Fatalf("%s: update: %v", step, err)
	}
	want, err := auditlog.BuildIndex(context.Background(), dir, auditlog.IndexOptions{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := dump(t, got), dump(t, want); g != w {
		t.Fatalf("%s: the follower's index differs from a full read\nfollower:\n%s\nfull read:\n%s", step, g, w)
	}
	if len(want.Entries()) == 0 {
		t.Fatalf("%s: nothing indexed", step)
	}
	return got
}

// TestFollowerMatchesBuildIndex: through appends, lines the writer has not
// finished, checks written before their envelope, rotations of either log
// (one or two between updates) and deleted files, a Follower's index says
// what a full read of the same files says, file names and lines included,
// and an update after appends reads only what was appended.
func TestFollowerMatchesBuildIndex(t *testing.T) {
	d := newLogDir(t)
	f := auditlog.NewFollower(d.dir, auditlog.IndexOptions{Space: "s"})

	d.check("q1", "alice", "chat")
	d.envelope("q1", "alice", "chat", []string{"bob"}, "", "", `{"text":"add 2 and 3?"}`)
	d.envelope("r1", "bob", "reasoning/start", []string{"alice"}, "q1", "", `{"message":"thinking"}`)
	same(t, f, d.dir, "first read")

	// Appends only: the update reads exactly the bytes appended.
	before, _ := f.Update(context.Background())
	read := before.Envelopes.Bytes + before.Decisions.Bytes
	size := func() int64 {
		var n int64
		for _, name := range []string{auditlog.EnvelopeHistory, auditlog.CapabilityDecisions} {
			fi, err := os.Stat(filepath.Join(d.dir, name))
			if err == nil {
				n += fi.Size()
			}
		}
		return n
	}
	was := size()
	d.check("c1", "bob", "mcp/request")
	d.envelope("c1", "bob", "mcp/request", []string{"calc"}, "", "r1", `{"method":"tools/call","params":{"name":"add"}}`)
	ix := same(t, f, d.dir, "appended")
	if got, want := ix.Envelopes.Bytes+ix.Decisions.Bytes-read, size()-was; got != want {
		t.Errorf("an update after appends read %d bytes; %d were appended", got, want)
	}

	// A check read before its envelope, the envelope's line unfinished.
	d.check("a1", "calc", "mcp/response")
	d.append(auditlog.EnvelopeHistory, `{"timestamp":"2026-05-01T10:00:01.000Z","event":"received","id":"a1",`)
	same(t, f, d.dir, "a line not finished")
	d.append(auditlog.EnvelopeHistory, `"envelope":{"protocol":"mew/v0.4","id":"a1","ts":"2026-05-01T10:00:01.000Z","from":"calc","kind":"mcp/response","to":["bob"],"correlation_id":["c1"],"payload":{"result":5}},"participant":"calc","space_id":"s","direction":"inbound","transport":"websocket"}`+"\n")
	ix = same(t, f, d.dir, "the line finished")
	if e := ix.Lookup("a1"); e == nil || len(e.Decisions) != 1 {
		t.Fatalf("a1's check, read before it: %+v", e)
	}

	// A grant whose decision lines come before its envelope; they name
	// the granter by its logical name, the envelope by its runtime alias.
	d.granted("g1", "alice", "bob")
	same(t, f, d.dir, "a grant's decision line")
	d.envelope("g1", "alice-2", "capability/grant", []string{"bob"}, "", "", `{"recipient":"bob","capabilities":[{"kind":"mcp/request"}],"ttl_seconds":60}`)

	// A rotation of the envelope history, then more.
	d.rotate(auditlog.EnvelopeHistory)
	d.envelope("c2", "bob", "mcp/request", []string{"calc"}, "", "r1", `{"method":"tools/call","params":{"name":"add"}}`)
	d.check("c2", "bob", "mcp/request")
	ix = same(t, f, d.dir, "the envelope history rotated")
	if e := ix.Lookup("q1"); e == nil || filepath.Base(e.Record.File) == auditlog.EnvelopeHistory {
		t.Fatalf("q1 is still named in the current file after the rotation: %+v", e.Record)
	}

	// Both logs rotated, twice for one, between two updates.
	d.rotate(auditlog.CapabilityDecisions)
	d.envelope("x1", "alice", "chat", []string{"bob"}, "", "", `{"text":"one"}`)
	d.rotate(auditlog.EnvelopeHistory)
	d.envelope("x2", "alice", "chat", []string{"bob"}, "x1", "", `{"text":"two"}`)
	d.rotate(auditlog.EnvelopeHistory)
	d.check("x3", "alice", "chat")
	d.envelope("x3", "alice", "chat", []string{"bob"}, "x2", "", `{"text":"three"}`)
	same(t, f, d.dir, "three rotations between two updates")

	// An envelope that reuses an id: the checks go to the one a full read
	// gives them to.
	d.check("x1", "alice", "chat")
	same(t, f, d.dir, "a check of a reused id")
	d.envelope("x1", "alice", "chat", []string{"bob"}, "", "", `{"text":"one again"}`)
	same(t, f, d.dir, "the id reused")

	// The oldest files deleted: the follower reads everything again.
	d.prune(auditlog.EnvelopeHistory)
	same(t, f, d.dir, "the oldest envelope file deleted")
	d.prune(auditlog.CapabilityDecisions)
	same(t, f, d.dir, "the oldest decisions file deleted")

	// A current file replaced (not rotated) and one cut short.
	if err := os.Remove(filepath.Join(d.dir, auditlog.EnvelopeHistory)); err != nil {
		t.Fatal(err)
	}
	d.envelope("y1", "alice", "chat", []string{"bob"}, "", "", `{"text":"a new file"}`)
	same(t, f, d.dir, "the current file replaced")
	if err := os.Truncate(filepath.Join(d.dir, auditlog.CapabilityDecisions), 0); err != nil {
		t.Fatal(err)
	}
	d.check("y1", "alice", "chat")
	same(t, f, d.dir, "the decisions cut short")
}

// TestFollowerCancelled: an update cut short by its context is taken up
// where it stopped, and gives what a full read gives.
func TestFollowerCancelled(t *testing.T) {
	d := newLogDir(t)
	for i := range 3000 {
		d.envelope(fmt.Sprintf("m%d", i), "alice", "chat", []string{"bob"}, "", "", `{"text":"hello"}`)
	}
	f := auditlog.NewFollower(d.dir, auditlog.IndexOptions{Space: "s"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Update(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("an update with an ended context: %v", err)
	}
	same(t, f, d.dir, "after a cancelled update")
}

// TestFollowerTooLarge: once the bodies outgrow the budget, updates say so
// without reading the files again, until the file holding most of them is
// deleted.
func TestFollowerTooLarge(t *testing.T) {
	d := newLogDir(t)
	big := `{"text":"` + strings.Repeat("x", 4000) + `"}`
	for i := range 10 {
		d.envelope(fmt.Sprintf("big%d", i), "alice", "chat", []string{"bob"}, "", "", big)
	}
	d.rotate(auditlog.EnvelopeHistory)
	d.envelope("small", "alice", "chat", []string{"bob"}, "", "", `{"text":"hi"}`)
	f := auditlog.NewFollower(d.dir, auditlog.IndexOptions{Space: "s", MaxBytes: 16 << 10})
	for i := range 2 {
		if _, err := f.Update(context.Background()); !errors.Is(err, auditlog.ErrTooLarge) {
			t.Fatalf("update %d: %v, want ErrTooLarge", i, err)
		}
	}
	// Still too large while no file is deleted, and the files are not read
	// again: the rotated file emptied in place (which the gateway never
	// does) goes unnoticed.
	files, err := auditlog.Files(d.dir, auditlog.EnvelopeHistory)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[0], []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Update(context.Background()); !errors.Is(err, auditlog.ErrTooLarge) {
		t.Fatalf("an update of a log too large: %v, want ErrTooLarge without reading", err)
	}
	if _, err := auditlog.BuildIndex(context.Background(), d.dir, auditlog.IndexOptions{Space: "s", MaxBytes: 16 << 10}); err != nil {
		t.Fatalf("a full read of the emptied log: %v", err)
	}
	d.prune(auditlog.EnvelopeHistory)
	ix := same(t, f, d.dir, "the large file deleted")
	if ix.Lookup("small") == nil {
		t.Fatal("small is not indexed")
	}
}
