package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/browsertest"
	"github.com/mew-protocol/mew/internal/mcpserver"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// webSpace: you hold everything; helper may only propose; files is a real
// MCP server (the filesystem server, bridged).
var webSpace = testutil.SpaceYAML("web",
	testutil.Member("you", "*"),
	testutil.Member("helper", "chat", "mcp/proposal", "mcp/withdraw", "capability/grant-ack"),
	testutil.Member("files", "mcp/response", "participant/status", "chat"),
)

// page wraps the browser with the few actions the test repeats.
type page struct {
	t   *testing.T
	ctx context.Context
}

func (p page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v\n%s", what, err, p.text("#app"))
	}
}

// wait polls a JavaScript condition until it holds.
func (p page) wait(what, cond string) {
	p.t.Helper()
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		p.t.Fatalf("waiting for %s (%s): %v\nthe page:\n%s", what, cond, err, p.text("#app"))
	}
}

func (p page) eval(expr string) any {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[any](expr))
	if err != nil {
		p.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func (p page) text(sel string) string {
	ctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+jsString(sel)+`)||{}).innerText||""`))
	return s
}

// click clicks the first node sel matches. The page re-renders a list when
// an envelope arrives, replacing its nodes: a click that found a node the
// re-render then replaced ("Could not find node with given id") is made
// again on the new one, as a person's next click would be.
func (p page) click(sel string) {
	p.t.Helper()
	var err error
	for range 5 {
		err = chromedp.Do(p.ctx, chromedp.Click(chromedp.CSS(sel)))
		if err == nil || !strings.Contains(err.Error(), "Could not find node with given id") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatalf("click %s: %v\n%s", sel, err, p.text("#app"))
	}
}

// shot writes a screenshot to $MEW_SCREENSHOTS/name.png when it is set (a
// relative directory is taken from the module's root).
func (p page) shot(name string) {
	p.t.Helper()
	dir := os.Getenv("MEW_SCREENSHOTS")
	if dir == "" {
		return
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", dir) // relative to the module's root, not to this package
	}
	b, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// openAs starts a browser, opens the console of g and joins with token
// typed in, then waits until the page lists at least n participants.
func openAs(t *testing.T, g *testutil.Gateway, token string, n int) page {
	t.Helper()
	p := page{t: t, ctx: browsertest.New(t, 3*time.Minute)}
	p.do("open the console", chromedp.Navigate(g.URL+"/console/"))
	p.do("type the token", chromedp.SendKeys(chromedp.CSS("#login-token"), token), chromedp.Click(chromedp.CSS("#login-go")))
	p.wait("joined", fmt.Sprintf(`document.querySelector("#status").dataset.state === "connected" && document.querySelectorAll("#participants .participant").length >= %d`, n))
	return p
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// startFiles bridges the filesystem MCP server over dir into the space as
// "files".
func startFiles(t *testing.T, g *testutil.Gateway, dir string) {
	t.Helper()
	srv, release, err := mcpserver.Filesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = release() })
	testutil.StartBridge(t, g, "files-token", bridge.Options{Server: bridge.Server{URL: mcptest.ServeHTTP(t, srv)}})
}

// TestSpaceView drives the console in Chromium through a real gateway: join
// with a token, a chat, a proposal approved end to end on a real MCP
// server, a 10-minute grant that lets the next identical call through
// without a dialog, its revocation from the ledger, and a correlation
// chain; then a one-time link.
func TestSpaceView(t *testing.T) {
	g := testutil.StartGateway(t, webSpace, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	work := t.TempDir()
	startFiles(t, g, work)
	helper := testutil.JoinParticipant(t, g, "helper-token", participant.Options{})
	p := openAs(t, g, "you-token", 3)
	if v := p.eval(`localStorage.length + sessionStorage.length`); v != float64(0) {
		t.Errorf("the page stored %v items in web storage", v)
	}

	// A chat arrives, its markdown rendered as elements, its HTML as text.
	if _, err := helper.Chat(t.Context(), "hello **world** <img src=x onerror=alert(1)>"); err != nil {
		t.Fatal(err)
	}
	p.wait("the chat", `[...document.querySelectorAll(".entry.chat")].some(e => e.querySelector("strong")?.textContent === "world" && e.textContent.includes("<img src=x"))`)
	if n := p.eval(`document.querySelectorAll("#stream img").length`); n != float64(0) {
		t.Fatalf("a peer's HTML became %v elements", n)
	}

	// The helper proposes writing a file; Yes fulfils it on the MCP server.
	call := map[string]any{"method": "tools/call", "params": map[string]any{"name": "write_file",
		"arguments": map[string]any{"path": "notes.txt", "content": "# Notes\nbuy milk\n"}}}
	ask := func() <-chan error { return callAsync(t, helper, "files", call) }
	answered := p.answered
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("# Notes\nbuy bread\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := ask()
	p.wait("the approval dialog", `!!document.querySelector("#queue .proposal .yes") && document.querySelector("#queue .preview").textContent.includes("buy milk")`)
	// What the write changes: the page read the file through the target's
	// reader tool and shows the lines that go and come.
	p.wait("the diff", `[...document.querySelectorAll("#queue .diff .del")].some(e => e.textContent.includes("buy bread")) && [...document.querySelectorAll("#queue .diff .add")].some(e => e.textContent.includes("buy milk"))`)
	p.shot("approval-diff")
	if got := p.text("#queue .preview"); !strings.HasPrefix(strings.TrimSpace(got), "path: notes.txt") {
		t.Errorf("the preview shows %q; want the path first, then the content", got)
	}
	p.shot("approval")
	p.click("#queue .proposal .yes")
	answered(first, "the approved call")
	if b, err := os.ReadFile(filepath.Join(work, "notes.txt")); err != nil || string(b) != "# Notes\nbuy milk\n" {
		t.Fatalf("notes.txt after approval: %q, %v", b, err)
	}
	p.wait("the result under the request", `[...document.querySelectorAll(".entry.request")].some(e => e.textContent.includes("write_file") && e.querySelector(".answers .response"))`)

	// Grant for 10 minutes: the call after it passes without a dialog.
	second := ask()
	p.wait("the second dialog", `!!document.querySelector("#queue .proposal .grant")`)
	p.click("#queue .proposal .grant")
	p.click(`#queue input[name=scope][value=tool]`)
	p.click(`#queue input[name=life][value="600"]`)
	p.click("#queue .grant-go")
	answered(second, "the granted call")
	payload := []byte(`{"method":"tools/call","params":{"name":"write_file","arguments":{"path":"notes.txt","content":"# Notes\nbuy milk\n"}}}`)
	waitFor(t, "the helper to hold the grant", func() bool { return helper.CanSend(protocol.KindMCPRequest, payload) })
	proposals := p.eval(`document.querySelectorAll(".proposal-entry").length`)
	third := ask()
	answered(third, "the call under the grant")
	p.wait("the granted call's result", `[...document.querySelectorAll(".entry.request")].filter(e => e.textContent.startsWith("helper") && e.querySelector(".answers .response")).length >= 1`)
	if now := p.eval(`document.querySelectorAll(".proposal-entry").length`); now != proposals || p.eval(`!!document.querySelector("#queue .proposal")`) != false {
		t.Fatalf("the granted call was proposed again (%v proposals, then %v)", proposals, now)
	}
	p.shot("space")

	// The ledger shows the grant, with its lifetime; revoking it there
	// makes the next call ask again.
	p.wait("the grant in the ledger", `[...document.querySelectorAll("#grants tr.grant")].some(r => r.textContent.includes("helper") && r.textContent.includes("write_file"))`)
	// Ten minutes: the row says until when, not "until revoked".
	if row := p.eval(`[...document.querySelectorAll("#grants tr.grant")].map(r => r.textContent).join("|")`).(string); !strings.Contains(row, "until ") || strings.Contains(row, "until revoked") {
		t.Errorf("the ten-minute grant's row: %q", row)
	}
	p.click("#grants tr.grant .revoke")
	waitFor(t, "the helper to lose the grant", func() bool { return !helper.CanSend(protocol.KindMCPRequest, payload) })
	p.wait("the ledger to empty", `!document.querySelector("#grants tr.grant")`)
	fourth := ask()
	p.wait("the dialog again", `!!document.querySelector("#queue .proposal .no")`)
	p.click("#queue .proposal .no")
	p.do("reject with words", chromedp.SendKeys(chromedp.CSS("#queue .reject-message"), "not this file, use notes2.txt"),
		chromedp.Click(chromedp.CSS("#queue .no-go")))
	select {
	case err := <-fourth:
		if err == nil {
			t.Fatal("the rejected call succeeded")
		}
		if !strings.Contains(err.Error(), "not this file, use notes2.txt") {
			t.Errorf("the proposer was not given the person's words: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the rejected call did not end")
	}

	// The chain of the granted proposal: proposal → grant → request → response.
	p.do("open the chain", chromedp.Click(chromedp.CSS(`.proposal-entry`)),
		chromedp.Evaluate[chromedp.Void](`document.querySelectorAll(".entry[data-kind='mcp/proposal'] .chain-btn")[1].click()`))
	p.wait("the chain", `!document.querySelector("#chain").hidden && document.querySelectorAll("#chain svg g.node").length >= 4`)
	kinds := p.eval(`[...document.querySelectorAll("#chain svg g.node")].map(n => n.dataset.kind).join(" ")`)
	for _, k := range []string{"mcp/proposal", "capability/grant", "mcp/request", "mcp/response"} {
		if !strings.Contains(kinds.(string), k) {
			t.Errorf("the chain %q lacks %s", kinds, k)
		}
	}
	if n := p.eval(`document.querySelectorAll("#chain svg path.edge").length`); n.(float64) < 3 {
		t.Errorf("the chain has %v edges", n)
	}
	// This gateway keeps no audit log: the page says the chain is its own.
	p.wait("the chain's source", `document.querySelector("#chain-source").dataset.source === "page" && document.querySelector("#chain-source").textContent.includes("keeps no audit log")`)
	p.shot("correlation")
	p.click("#chain-close")
	p.wait("the map", `document.querySelectorAll("#map svg line.flow").length >= 1`)

	// A one-time link joins as its participant, leaves no code in the
	// address bar, and does not work twice.
	link := consoleLink(t, g, "you-token")
	p.do("open the link", chromedp.Navigate("about:blank"), chromedp.Navigate(g.URL+link))
	p.wait("joined by link", `document.querySelector("#status").dataset.state === "connected" && document.querySelector("#whoami").textContent.includes("me you")`)
	if loc := p.eval(`location.href + "|" + history.length`); strings.Contains(loc.(string), "code") {
		t.Errorf("the code stayed in the address bar: %v", loc)
	}
	p.do("open the link again", chromedp.Navigate("about:blank"), chromedp.Navigate(g.URL+link))
	p.wait("the refusal", `document.querySelector("#login-error").textContent.includes("unknown, used or expired")`)
}

// consoleLink asks g for a one-time console link of token's participant
// in space web and returns its path.
func consoleLink(t *testing.T, g *testutil.Gateway, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/console/links?space=web", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var link struct{ Path string }
	if err := json.NewDecoder(resp.Body).Decode(&link); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("a console link: %d %v", resp.StatusCode, err)
	}
	return link.Path
}

// callAsync makes who's call to target on a goroutine (a proposal waits
// for the page's decision) and returns its outcome.
func callAsync(t *testing.T, who *participant.Participant, target string, call any) <-chan error {
	ch := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		_, err := who.Request(ctx, target, call)
		ch <- err
	}()
	return ch
}

// answered waits for the outcome of callAsync, failing on an error.
func (p page) answered(ch <-chan error, what string) {
	p.t.Helper()
	select {
	case err := <-ch:
		if err != nil {
			p.t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(30 * time.Second):
		p.t.Fatalf("%s: no answer\n%s", what, p.text("#app"))
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 15*time.Second, what, cond)
}
