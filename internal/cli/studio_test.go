package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/console/studio"
	"github.com/mew-protocol/mew/internal/testutil"
)

// `mew agent studio` serves the studio on loopback, prints a URL whose
// fragment carries the secret, answers the API with it and nothing
// without it, and stops with its context.
func TestAgentStudioServes(t *testing.T) {
	desk := writeDesk(t, "")
	out := &testutil.Buffer{}
	root := NewRoot(Options{Stdout: out, Stderr: &testutil.Buffer{}, Getenv: func(string) string { return "" }})
	root.SetArgs([]string{"agent", "studio", "--config", desk.path, "--no-browser"})
	served := testutil.Background(t, root.ExecuteContext)
	urlRE := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/#secret=([A-Za-z0-9_-]{20,})`)
	var m []string
	for deadline := time.Now().Add(10 * time.Second); m == nil; {
		if m = urlRE.FindStringSubmatch(out.String()); m == nil {
			if time.Now().After(deadline) {
				t.Fatalf("no URL printed: %q", out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	get := func(secret string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+m[1]+"/api/definition", nil)
		if secret != "" {
			req.Header.Set(studio.SecretHeader, secret)
		}
		resp, b := testutil.HTTPDo(t, req, nil)
		return resp.StatusCode, string(b)
	}
	if code, body := get(m[2]); code != http.StatusOK || !strings.Contains(body, `"name":"find_flights"`) {
		t.Errorf("with the secret: %d %s", code, body)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("without the secret: %d", code)
	}
	if err := served.Stop(); err != nil {
		t.Errorf("mew agent studio: %v", err)
	}
}

// The studio writes files, so it serves on a loopback IP address only,
// and a definition that does not load is refused before anything is
// served.
func TestAgentStudioRefuses(t *testing.T) {
	desk := writeDesk(t, "")
	for _, listen := range []string{"0.0.0.0:0", "localhost:0", "[::]:0", "example.com:80", "nonsense"} {
		_, _, err := run(t, Options{}, "agent", "studio", "--config", desk.path, "--no-browser", "--listen", listen)
		if err == nil || !strings.Contains(err.Error(), "--listen") {
			t.Errorf("--listen %s: %v", listen, err)
		}
	}
	data, err := os.ReadFile(desk.path)
	if err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(broken, append(data, "  - name: echo\n    prompt: again\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = run(t, Options{}, "agent", "studio", "--config", broken, "--no-browser")
	if err == nil || !strings.Contains(err.Error(), "duplicate tool name") {
		t.Errorf("a broken definition: %v", err)
	}
}
