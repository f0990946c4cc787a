package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/auditlog"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

const auditSpace = `
space: {id: audited}
participants:
  alice: {tokens: [alice-token], capabilities: [{kind: chat}]}
  bob: {tokens: [bob-token], capabilities: [{kind: chat}]}
  carol: {tokens: [carol-token], capabilities: [{kind: chat}]}
`

// writeAuditLog runs a real gateway with opts through a short conversation:
// n chats from alice to bob (ids a0, a1, ...), one envelope of bob's that is
// refused, all seen by carol; it stops the gateway and returns the log
// directory.
func writeAuditLog(t *testing.T, opts gateway.Options, n int) string {
	t.Helper()
	g := testutil.StartGateway(t, auditSpace, opts)
	peers := testutil.JoinAll(t, g.WSURL, "alice-token", "bob-token", "carol-token")
	alice, bob, carol := peers[0], peers[1], peers[2]
	bob.SendText(`{"id":"refused-1","kind":"mcp/request","payload":{"method":"tools/list"}}`)
	bob.Expect("system/error")
	for i := range n {
		alice.SendText(fmt.Sprintf(`{"id":"a%d","kind":"chat","to":["bob"],"payload":{"text":"message number %d"}}`, i, i))
	}
	last := fmt.Sprintf("a%d", n-1)
	carol.ExpectFunc("chat", func(m testutil.Msg) bool { return m.ID() == last })
	g.Stop(t)
	return filepath.Dir(g.LogPath(auditlog.EnvelopeHistory))
}

// grepE runs grep -E pattern over the files and returns the matching lines;
// without a grep on the machine it uses Go's regexp, whose syntax agrees for
// these patterns.
func grepE(t *testing.T, pattern string, files ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("grep"); err == nil {
		out, err := exec.Command("grep", append([]string{"-h", "-E", pattern}, files...)...).Output()
		if err != nil && len(out) == 0 {
			return nil
		}
		return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	}
	re := regexp.MustCompile(pattern)
	var lines []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for l := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
			if re.MatchString(l) {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

// TestAuditLogReferenceGreps: the patterns the reference's e2e helpers grep
// the envelope history with find the same things in both layouts, and the
// compact one holds each chat's body once.
func TestAuditLogReferenceGreps(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"compact", "reference"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			const n = 5
			dir := writeAuditLog(t, gateway.Options{Audit: gateway.AuditOptions{Format: format}}, n)
			hist := filepath.Join(dir, auditlog.EnvelopeHistory)
			for i := range n {
				id := fmt.Sprintf("a%d", i)
				// wait_for_envelope, wait_for_envelope_receipt: compact
				// delivers to all three on one grouped line
				lines := 2
				if format == "reference" {
					lines = 4
				}
				if got := grepE(t, `"id":"`+id+`"`, hist); len(got) != lines {
					t.Errorf(`"id":"%s": %d lines, want %d (received, delivered)`, id, len(got), lines)
				}
				if got := grepE(t, `"event":"received".*"id":"`+id+`"`, hist); len(got) != 1 {
					t.Errorf("receipt of %s: %d lines", id, len(got))
				}
				// wait_for_delivery
				for _, p := range []string{"alice", "bob", "carol"} {
					if got := grepE(t, `"event":"delivered".*"id":"`+id+`".*"participant":"`+p+`"`, hist); len(got) != 1 {
						t.Errorf("delivery of %s to %s: %d lines", id, p, len(got))
					}
				}
				if got := grepE(t, `"event":"delivered".*"id":"`+id+`".*"participant":"dave"`, hist); len(got) != 0 {
					t.Errorf("delivery of %s to dave, who is not in the space: %q", id, got)
				}
				// the body, by kind and id, and by its fields
				bodies := grepE(t, `"kind":"chat".*"id":"`+id+`"|"id":"`+id+`".*"kind":"chat"`, hist)
				want := 1
				if format == "reference" {
					want = 4
				}
				if len(bodies) != want {
					t.Errorf("body of %s on %d lines, want %d", id, len(bodies), want)
				}
				if got := grepE(t, `"id":"`+id+`".*"to":\["bob"\]`, hist); len(got) != want {
					t.Errorf(`"to":["bob"] of %s on %d lines, want %d`, id, len(got), want)
				}
			}
			if got := grepE(t, `"event":"rejected".*"id":"refused-1"`, hist); len(got) != 1 {
				t.Errorf("rejection: %d lines", len(got))
			}
			// wait_for_capability_grant's grep fallback, in upstream key order
			dec := filepath.Join(dir, auditlog.CapabilityDecisions)
			if got := grepE(t, `"envelope_id":"a0".*"participant":"alice".*"result":"allowed".*"required_capability":"chat"`, dec); len(got) != 1 {
				t.Errorf("capability decision of a0: %d lines", len(got))
			}
			// Every line is one JSON object, its chain last.
			b, _ := os.ReadFile(hist)
			for l := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(l), &m); err != nil || m["chain"] == nil {
					t.Fatalf("line %q: %v", l, err)
				}
			}
		})
	}
}

// TestAuditLogHostileIDs: envelope ids and a participant id made of
// quotes, braces, backslashes and non-ASCII text are escaped on every line,
// in both layouts: each line stays one JSON object, the reference's
// delivery grep finds each delivery with the JSON-escaped ids, and no id
// can make it match a participant that received nothing.
func TestAuditLogHostileIDs(t *testing.T) {
	t.Parallel()
	const mal = `mal"},{"participant":"carol` // carol is not in the space
	cfg := `
space: {id: hostile}
participants:
  alice: {tokens: [alice-token], capabilities: [{kind: chat}]}
  bob: {tokens: [bob-token], capabilities: [{kind: chat}]}
  'mal"},{"participant":"carol': {tokens: [mal-token], capabilities: [{kind: chat}]}
`
	ids := []string{`q"uote`, `back\slash`, `猫 😊`, `x","participant":"carol`, `y"}],"recipients":[{"participant":"carol`}
	for _, format := range []string{"compact", "reference"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			g := testutil.StartGateway(t, cfg, gateway.Options{Audit: gateway.AuditOptions{Format: format}})
			peers := testutil.JoinAll(t, g.WSURL, "alice-token", "bob-token", "mal-token")
			alice, m := peers[0], peers[2]
			for _, id := range ids {
				b, err := json.Marshal(map[string]any{"id": id, "kind": "chat", "payload": map[string]string{"text": "hi " + id}})
				if err != nil {
					t.Fatal(err)
				}
				alice.SendText(string(b))
			}
			last := ids[len(ids)-1]
			m.ExpectFunc("chat", func(msg testutil.Msg) bool { return msg.ID() == last })
			g.Stop(t)
			hist := g.LogPath(auditlog.EnvelopeHistory)

			b, err := os.ReadFile(hist)
			if err != nil {
				t.Fatal(err)
			}
			for l := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
				var v map[string]json.RawMessage
				if err := json.Unmarshal([]byte(l), &v); err != nil || v["chain"] == nil {
					t.Fatalf("line %q: %v", l, err)
				}
			}
			// quoted is s as the log writes it, as a pattern.
			quoted := func(s string) string {
				j, err := json.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				// The log escapes as JSON.stringify: no \u escapes for <, >, &.
				j = bytes.ReplaceAll(j, []byte(`\u003c`), []byte("<"))
				return regexp.QuoteMeta(string(j))
			}
			for _, id := range ids {
				for _, p := range []string{"alice", "bob", mal} {
					pat := `"event":"delivered".*"id":` + quoted(id) + `.*"participant":` + quoted(p)
					if got := grepE(t, pat, hist); len(got) != 1 {
						t.Errorf("delivery of %q to %q: %d lines for %s", id, p, len(got), pat)
					}
				}
			}
			// Nothing was delivered to carol, nor under the id "x" or "y".
			for _, pat := range []string{`"participant":"carol"`, `"id":"x"`, `"id":"y"`} {
				if got := grepE(t, pat, hist); len(got) != 0 {
					t.Errorf("%s matches %q", pat, got)
				}
			}
			// The reader gives each id's three deliveries.
			got := map[string][]string{}
			if _, err := auditlog.Scan(context.Background(), filepath.Dir(hist), auditlog.EnvelopeHistory, auditlog.ReadOptions{}, func(r *auditlog.Record) error {
				if r.Event == auditlog.Delivered && r.Kind() == "chat" {
					got[r.ID] = append(got[r.ID], r.Participant)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if ps := got[id]; len(ps) != 3 || !slices.Contains(ps, mal) || !slices.Contains(ps, "alice") || !slices.Contains(ps, "bob") {
					t.Errorf("%q delivered to %q", id, ps)
				}
			}
			if len(got) != len(ids) {
				t.Errorf("chats delivered under %d ids, want %d: %q", len(got), len(ids), got)
			}
		})
	}
}

// TestAuditLogCompactBodies: in the compact layout every delivered line
// finds its body on an earlier line with its id, and it is the body the
// reference layout repeats on that line.
func TestAuditLogCompactBodies(t *testing.T) {
	t.Parallel()
	dir := writeAuditLog(t, gateway.Options{}, 5)
	b, err := os.ReadFile(filepath.Join(dir, auditlog.EnvelopeHistory))
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]json.RawMessage{}
	delivered, withBody := 0, 0
	for l := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
		var rec struct {
			Event, ID, Participant string
			Envelope               json.RawMessage
			Recipients             []struct{ Participant string }
			Everyone               int // a presence to everyone but its subject, by number
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Envelope != nil {
			bodies[rec.ID] = rec.Envelope
		}
		if rec.Event != "delivered" {
			continue
		}
		if rec.Participant != "" || (len(rec.Recipients) == 0) == (rec.Everyone == 0) {
			t.Fatalf("delivered line not grouped: %s", l)
		}
		delivered++
		if rec.Envelope != nil {
			withBody++ // the gateway's own envelopes: welcome, presence, error
		}
		body := bodies[rec.ID]
		if body == nil {
			t.Fatalf("delivered line without a body before it: %s", l)
		}
		var env struct{ ID, Kind string }
		if err := json.Unmarshal(body, &env); err != nil || env.ID != rec.ID {
			t.Errorf("body of %s is %s", rec.ID, body)
		}
	}
	// The 5 chats' delivered lines refer to their received lines.
	if delivered < 6 || withBody == 0 || withBody != delivered-5 {
		t.Errorf("%d delivered lines, %d with a body, want all but the 5 chats'", delivered, withBody)
	}
}

// tamper is one change to a copy of a log directory and what verify must
// say about it.
type tamper struct {
	name   string
	change func(t *testing.T, files []string) (file string, line int)
	reason string
}

// editLines rewrites the lines of path with f.
func editLines(t *testing.T, path string, f func([]string) []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	lines = f(lines)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestLogVerify: a log written by a real gateway, rotated into several
// files, verifies; each kind of change to a copy of it is found at the line
// where it was made, and verify exits non-zero.
func TestLogVerify(t *testing.T) {
	t.Parallel()
	src := writeAuditLog(t, gateway.Options{Audit: gateway.AuditOptions{MaxFileSize: 4096, MaxFiles: -1}}, 60)
	files, err := auditlog.Files(src, auditlog.EnvelopeHistory)
	if err != nil || len(files) < 4 {
		t.Fatalf("%d envelope history files (%v), want 4 or more", len(files), err)
	}

	// Intact: by the log directory, and by the space directory.
	for _, dir := range []string{src, filepath.Dir(filepath.Dir(src))} {
		stdout, _, err := run(t, Options{}, "log", "verify", dir)
		if err != nil || !strings.Contains(stdout, "ok: ") || !strings.Contains(stdout, "last hash ") {
			t.Fatalf("verify %s: %v\n%s", dir, err, stdout)
		}
	}

	mid := func(files []string) string { return files[1] }
	cases := []tamper{
		{"altered byte", func(t *testing.T, files []string) (string, int) {
			editLines(t, mid(files), func(l []string) []string {
				l[2] = strings.Replace(l[2], `"space_id":"audited"`, `"space_id":"audiTed"`, 1)
				return l
			})
			return mid(files), 3
		}, "altered"},
		{"deleted line", func(t *testing.T, files []string) (string, int) {
			editLines(t, mid(files), func(l []string) []string { return append(l[:2:2], l[3:]...) })
			return mid(files), 3
		}, "line 3 was removed"},
		{"inserted line", func(t *testing.T, files []string) (string, int) {
			editLines(t, mid(files), func(l []string) []string {
				return append(l[:2:2], append([]string{l[0]}, l[2:]...)...)
			})
			return mid(files), 3
		}, "inserted"},
		{"forged line", func(t *testing.T, files []string) (string, int) {
			editLines(t, mid(files), func(l []string) []string {
				forged := strings.Replace(l[2], `"event":"`, `"event":"x`, 1)
				return append(l[:2:2], append([]string{forged}, l[2:]...)...)
			})
			return mid(files), 3
		}, "inserted"},
		{"swapped lines", func(t *testing.T, files []string) (string, int) {
			editLines(t, mid(files), func(l []string) []string { l[2], l[3] = l[3], l[2]; return l })
			return mid(files), 3
		}, "lines 3 and 4 are swapped"},
		{"truncated last line", func(t *testing.T, files []string) (string, int) {
			cur := files[len(files)-1]
			b, _ := os.ReadFile(cur)
			n := bytes.Count(b, []byte("\n"))
			if err := os.WriteFile(cur, b[:len(b)-20], 0o600); err != nil {
				t.Fatal(err)
			}
			return cur, n
		}, "cut off"},
		{"removed rotated file", func(t *testing.T, files []string) (string, int) {
			if err := os.Remove(files[1]); err != nil {
				t.Fatal(err)
			}
			return files[2], 1
		}, "does not continue " + filepath.Base(files[0])},
		{"removed last line of a rotated file", func(t *testing.T, files []string) (string, int) {
			editLines(t, mid(files), func(l []string) []string { return l[:len(l)-1] })
			return files[2], 1
		}, "does not continue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, src)
			files, err := auditlog.Files(dir, auditlog.EnvelopeHistory)
			if err != nil {
				t.Fatal(err)
			}
			file, line := tc.change(t, files)
			stdout, _, err := run(t, Options{}, "log", "verify", dir)
			where := fmt.Sprintf("%s:%d: ", file, line)
			if err == nil {
				t.Fatalf("verify passed:\n%s", stdout)
			}
			if !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("verify says %v\nwant %s...%s", err, where, tc.reason)
			}
			if !strings.Contains(stdout, "BROKEN at "+where) || !strings.Contains(stdout, auditlog.CapabilityDecisions+": ") || strings.Count(stdout, "BROKEN") != 1 {
				t.Errorf("output:\n%s", stdout)
			}
		})
	}
}

// TestLogVerifyRestart: a gateway started again on the same directory
// continues the chain of its files, and the whole verifies.
func TestLogVerifyRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range 3 {
		s, err := testutil.Serve(dir, auditSpace, gateway.Options{})
		if err != nil {
			t.Fatal(err)
		}
		alice, _ := testutil.Join(t, "ws://"+s.Addr+"/ws?space=audited", "alice-token")
		alice.SendText(fmt.Sprintf(`{"id":"r%d","kind":"chat","payload":{"text":"hi"}}`, i))
		alice.Expect("chat")
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	logs := filepath.Join(dir, ".mew", "logs")
	stdout, _, err := run(t, Options{}, "log", "verify", logs)
	if err != nil || !strings.Contains(stdout, auditlog.EnvelopeHistory+": 1 file, ") {
		t.Fatalf("verify: %v\n%s", err, stdout)
	}
	if got := grepE(t, `"chain_prev":`, filepath.Join(logs, auditlog.EnvelopeHistory)); len(got) != 3 {
		t.Errorf("%d lines with chain_prev, want one per start (3)", len(got))
	}
}

func TestLogVerifyNoLog(t *testing.T) {
	t.Parallel()
	_, _, err := run(t, Options{}, "log", "verify", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "no audit log") {
		t.Fatalf("err = %v", err)
	}
}
