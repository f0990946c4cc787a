package tui

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// updating reports whether the test run was asked to rewrite the golden
// frames (-update, the flag that teatest's golden package defines).
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// fakeSpace records what the model does in the space.
type fakeSpace struct {
	mu         sync.Mutex
	me         string
	sent       []*protocol.Envelope
	fulfilled  []string
	rejected   []string // "id reason message"
	approved   []string // ids given an approval under the space's policy
	edited     []string // "id params" of the fulfilments with edited params
	settled    map[string]participant.ProposalStatus
	noRequests bool // the user may not send mcp/request (cannot fulfil)
	noAnswers  bool // the user may not send elicitation/response
	tools      map[string][]string
	now        func() time.Time
	ledger     []LedgerGrant     // as a gateway keeps it from the grants and revokes sent
	files      map[string]string // what files/read_file answers, by path
	calls      []string          // "target payload" of Call
}

func (f *fakeSpace) Call(_ context.Context, target string, payload json.RawMessage) (json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, target+" "+string(payload))
	var c struct {
		Params struct {
			Arguments struct{ Path string } `json:"arguments"`
		} `json:"params"`
	}
	_ = json.Unmarshal(payload, &c)
	text, ok := f.files[c.Params.Arguments.Path]
	if !ok {
		return json.Marshal(map[string]any{"isError": true, "content": []any{map[string]string{"type": "text", "text": "ENOENT"}}})
	}
	return json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": text}}})
}

func newFake() *fakeSpace {
	return &fakeSpace{me: "you", settled: map[string]participant.ProposalStatus{}, tools: map[string][]string{
		"calculator": {"add", "subtract"}, "files": {"read_file", "write_file"},
	}}
}

func (f *fakeSpace) Me() string { return f.me }

func (f *fakeSpace) Send(_ context.Context, env *protocol.Envelope) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, env)
	switch env.Kind {
	case protocol.KindCapabilityGrant:
		var g protocol.Grant
		_ = env.DecodePayload(&g)
		lg := LedgerGrant{ID: env.ID, From: f.me, To: g.Recipient, Capabilities: g.Capabilities, GrantedAt: f.now()}
		if g.TTLSeconds > 0 {
			lg.ExpiresAt = lg.GrantedAt.Add(time.Duration(g.TTLSeconds) * time.Second)
		}
		f.ledger = append(f.ledger, lg)
	case protocol.KindCapabilityRevoke:
		var r protocol.Revoke
		_ = env.DecodePayload(&r)
		f.ledger = slices.DeleteFunc(f.ledger, func(g LedgerGrant) bool { return g.ID == r.GrantID })
	}
	return nil
}

func (f *fakeSpace) Grants(context.Context) ([]LedgerGrant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	var out []LedgerGrant
	for _, g := range f.ledger {
		if g.ExpiresAt.IsZero() || now.Before(g.ExpiresAt) {
			out = append(out, g)
		}
	}
	return out, nil
}

func (f *fakeSpace) Fulfill(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.settled[id]; ok {
		return &participant.ProposalSettledError{ProposalID: id, Status: st}
	}
	f.fulfilled = append(f.fulfilled, id)
	f.settled[id] = participant.ProposalStatus{Settlement: participant.Approved, By: f.me}
	return nil
}

func (f *fakeSpace) FulfillWith(ctx context.Context, id string, params json.RawMessage) error {
	if err := f.Fulfill(ctx, id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.edited = append(f.edited, id+" "+string(params))
	return nil
}

func (f *fakeSpace) Approve(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.approved = append(f.approved, id)
	return nil
}

func (f *fakeSpace) Reject(_ context.Context, id, reason, message string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.settled[id]; ok {
		return &participant.ProposalSettledError{ProposalID: id, Status: st}
	}
	f.rejected = append(f.rejected, strings.TrimSpace(id+" "+reason+" "+message))
	f.settled[id] = participant.ProposalStatus{Settlement: participant.Rejected, By: f.me, Reason: reason}
	return nil
}

func (f *fakeSpace) CanSend(kind string, _ []string, _ []byte) bool {
	return !(kind == protocol.KindMCPRequest && f.noRequests) && !(kind == protocol.KindElicitationResponse && f.noAnswers)
}

func (f *fakeSpace) ToolsOf(_ context.Context, id string) ([]string, error) {
	return f.tools[id], nil
}

// harness drives a model without a terminal.
type harness struct {
	t    *testing.T
	m    *Model
	sp   *fakeSpace
	now  time.Time
	quit bool
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	sp := newFake()
	h := newHarnessWith(t, sp)
	h.sp = sp
	sp.now = func() time.Time { return h.now }
	h.recv(welcome("you", "assistant", "calculator", "files"))
	return h
}

// newHarnessWith drives a model of sp on an 80×24 screen, with a clock
// that moves only when the test moves it.
func newHarnessWith(t *testing.T, sp Space) *harness {
	t.Helper()
	h := &harness{t: t, now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	h.m = New(Options{
		Space: sp, SpaceName: "demo", Context: t.Context(),
		Now:  func() time.Time { return h.now },
		Tick: func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil },
	})
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	return h
}

// send gives the model a message and runs the commands it returns, and
// theirs, to the end.
func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	_, cmd := h.m.Update(msg)
	h.run(cmd)
}

func (h *harness) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			h.run(c)
		}
	case tea.QuitMsg:
		h.quit = true
	default:
		_, next := h.m.Update(msg)
		h.run(next)
	}
}

// recv feeds envelopes as if seen in the space.
func (h *harness) recv(envs ...*protocol.Envelope) {
	h.t.Helper()
	for _, e := range envs {
		h.send(Envelope{Env: e})
	}
}

// key presses keys by name: "enter", "esc", "pgup", "ctrl+c", or a
// single character.
func (h *harness) key(names ...string) {
	h.t.Helper()
	for _, n := range names {
		h.send(keyMsg(n))
	}
}

func keyMsg(n string) tea.KeyPressMsg {
	switch n {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "home":
		return tea.KeyPressMsg{Code: tea.KeyHome}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	case "ctrl+f":
		return tea.KeyPressMsg{Code: 'f', Mod: tea.ModCtrl}
	case "f2":
		return tea.KeyPressMsg{Code: tea.KeyF2}
	case "alt+enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModAlt}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case " ":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	}
	r := []rune(n)
	return tea.KeyPressMsg{Code: r[0], Text: n}
}

// typeLine types s and presses Enter.
func (h *harness) typeLine(s string) {
	h.t.Helper()
	for _, r := range s {
		h.send(keyMsg(string(r)))
	}
	h.key("enter")
}

// screen is the frame without colour, trailing spaces trimmed.
func (h *harness) screen() string {
	content, _ := h.m.frame()
	lines := strings.Split(ansi.Strip(content), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// golden compares the screen with testdata/NAME.golden and, drawn again
// on a 160×48 terminal (the same state, resized), with
// testdata/NAME.160x48.golden; a frame drawn at another size is compared
// at that size only.
func (h *harness) golden(name string) {
	h.t.Helper()
	h.goldenAt(name)
	if h.m.width != 80 || h.m.height != 24 {
		return
	}
	offset := h.m.tr.offset
	h.send(tea.WindowSizeMsg{Width: 160, Height: 48})
	h.goldenAt(name + ".160x48")
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	h.m.tr.offset = offset
}

// goldenAt compares the screen at its size with testdata/NAME.golden.
func (h *harness) goldenAt(name string) {
	h.t.Helper()
	got := h.screen()
	if n := strings.Count(got, "\n"); n != h.m.height {
		h.t.Errorf("frame %s has %d lines, want %d", name, n, h.m.height)
	}
	for i, l := range strings.Split(got, "\n") {
		if w := ansi.StringWidth(l); w > h.m.width {
			h.t.Errorf("frame %s line %d is %d wide: %q", name, i, w, l)
		}
	}
	compareGolden(h.t, name, got)
}

// compareGolden compares got with testdata/NAME.golden, or writes it there
// under -update.
func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("frame %s differs from %s:\n--- got\n%s--- want\n%s", name, path, got, want)
	}
}

// sentKinds returns the envelopes the model sent, of kind.
func (h *harness) sentOf(kind string) []*protocol.Envelope {
	h.sp.mu.Lock()
	defer h.sp.mu.Unlock()
	var out []*protocol.Envelope
	for _, e := range h.sp.sent {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// sentOne returns the one envelope of kind sent, with its payload decoded
// into v, and fails the test unless exactly one was sent.
func (h *harness) sentOne(kind string, v any) *protocol.Envelope {
	h.t.Helper()
	sent := h.sentOf(kind)
	if len(sent) != 1 {
		h.t.Fatalf("sent %d %s, want 1", len(sent), kind)
	}
	if err := sent[0].DecodePayload(v); err != nil {
		h.t.Fatal(err)
	}
	return sent[0]
}

// envelope builds an envelope as the gateway relays it.
func envelope(kind, from, id string, to []string, corr []string, payload any) *protocol.Envelope {
	env, err := protocol.New(kind, payload)
	if err != nil {
		panic(err)
	}
	env.Protocol, env.From, env.ID, env.To, env.CorrelationID = protocol.Version, from, id, to, corr
	env.TS = "2026-03-01T12:00:00Z"
	return env
}

func welcome(me string, others ...string) *protocol.Envelope {
	w := protocol.Welcome{You: protocol.ParticipantInfo{ID: me}}
	for _, o := range append([]string{me}, others...) {
		w.Participants = append(w.Participants, protocol.ParticipantInfo{ID: o})
	}
	return envelope(protocol.KindSystemWelcome, protocol.GatewayID, "w1", []string{me}, nil, w)
}

func chat(from, id, text string, to ...string) *protocol.Envelope {
	return envelope(protocol.KindChat, from, id, to, nil, protocol.Chat{Text: text})
}

func call(from, id, to, tool string, args any) *protocol.Envelope {
	return envelope(protocol.KindMCPRequest, from, id, []string{to}, nil, map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args},
	})
}

func propose(from, id, to, tool string, args any) *protocol.Envelope {
	return envelope(protocol.KindMCPProposal, from, id, []string{to}, nil, map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args},
	})
}

func reply(from, id, corr, to, text string) *protocol.Envelope {
	return envelope(protocol.KindMCPResponse, from, id, []string{to}, []string{corr}, map[string]any{
		"jsonrpc": "2.0", "id": 1, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}},
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// attached is a harness whose model reads what the space sends to the
// participant you, which a real gateway serves.
type attached struct {
	*harness
	events chan tea.Msg
	seen   []*protocol.Envelope // every envelope pumped, in order
}

// attachTo starts a harness over you, joined to space "tui" of g with
// token; the model sees nothing until pump hands it what came.
func attachTo(t *testing.T, g *testutil.Gateway, you *participant.Participant, token string) *attached {
	t.Helper()
	h := newHarnessWith(t, NewSDKSpace(you, SDKOptions{Gateway: "ws://" + g.Addr, Space: "tui", Token: token}))
	h.m.welcome(you.Client().Welcome())
	a := &attached{harness: h, events: make(chan tea.Msg, 4096)}
	t.Cleanup(Attach(you, func(m tea.Msg) { a.events <- m }))
	return a
}

// pump hands the model what the space sent until ok holds, failing after
// 20 s with the screen.
func (a *attached) pump(what string, ok func() bool) {
	a.t.Helper()
	deadline := time.After(20 * time.Second)
	for !ok() {
		select {
		case msg := <-a.events:
			if e, isEnv := msg.(Envelope); isEnv {
				a.seen = append(a.seen, e.Env)
			}
			a.send(msg)
		case <-deadline:
			a.t.Fatalf("waiting for %s; the screen:\n%s", what, a.screen())
		}
	}
}
