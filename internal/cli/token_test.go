package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

func TestTokenCommands(t *testing.T) {
	dir := t.TempDir()
	mew := filepath.Join(dir, ".mew")
	if err := os.MkdirAll(mew, 0o755); err != nil {
		t.Fatal(err)
	}
	yaml := "space: {id: tok}\nparticipants:\n  agent: {capabilities: [{kind: chat}]}\n  bot: {tokens: [bot-literal], capabilities: [{kind: chat}]}\n"
	if err := os.WriteFile(filepath.Join(mew, "space.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}

	out, _, err := run(t, Options{}, "token", "create", "-d", dir, "-p", "agent")
	tok := strings.TrimSpace(out)
	if err != nil || len(tok) != 43 {
		t.Fatalf("create: %q %v", out, err)
	}
	fi, err := os.Stat(filepath.Join(mew, "tokens", "agent.token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	if _, _, err := run(t, Options{}, "token", "create", "-d", dir, "-p", "agent"); err == nil || !strings.Contains(err.Error(), "--rotate") {
		t.Fatalf("second create: %v", err)
	}

	// The gateway for that space accepts the token as agent's.
	s, err := testutil.Serve(dir, yaml, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	if err != nil {
		t.Fatal(err)
	}
	p, w := testutil.Join(t, "ws://"+s.Addr+"/ws", tok)
	if w.Payload()["you"].(map[string]any)["id"] != "agent" {
		t.Fatalf("welcome %s", w.Raw)
	}
	_ = p.Conn.CloseNow()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	out, _, err = run(t, Options{}, "token", "create", "-d", dir, "-p", "agent", "--rotate", "-c", `[{"kind":"chat"}]`)
	if err != nil || strings.TrimSpace(out) == tok {
		t.Fatalf("rotate: %q %v", out, err)
	}
	if _, _, err := run(t, Options{}, "token", "create", "-d", dir, "-p", "invited"); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, Options{}, "token", "list", "-d", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"agent  ", "file", "bot ", "space.yaml tokens", "invited", "not in space.yaml"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "bot-literal") || strings.Contains(out, tok) {
		t.Fatalf("list shows a token:\n%s", out)
	}
	if _, stderr, err := run(t, Options{}, "token", "revoke", "-d", dir, "-p", "agent"); err != nil || !strings.Contains(stderr, "refuses the token") {
		t.Fatalf("revoke: %q %v", stderr, err)
	}
	if _, err := os.Stat(filepath.Join(mew, "tokens", "agent.token")); !os.IsNotExist(err) {
		t.Fatalf("token file still there: %v", err)
	}
	for _, args := range [][]string{
		{"token", "revoke", "-d", dir, "-p", "agent"},
		{"token", "create", "-d", dir, "-p", "../etc"},
		{"token", "create", "-d", dir},
		{"token", "revoke", "-d", dir, "-p", "a/b"},
	} {
		if _, _, err := run(t, Options{}, args...); err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
}
