package tui

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// LedgerGrant is one runtime grant in force in the space, as the gateway's
// ledger (GET /participants/{id}/grants) lists it.
type LedgerGrant struct {
	ID           string            // the capability/grant envelope's id
	From, To     string            // granter and holder, by logical name
	Capabilities []json.RawMessage // the patterns granted
	GrantedAt    time.Time
	ExpiresAt    time.Time // zero: until revoked
}

// maxLedgerBody bounds the ledger answer read (256 grants per participant
// of 64 patterns each fit many times over).
const maxLedgerBody = 8 << 20

// ledgerURL turns the gateway's WebSocket URL into the URL of me's ledger:
// the same host, http for ws and https for wss.
func ledgerURL(gateway, space, me string) (string, error) {
	u, err := url.Parse(gateway)
	if err != nil {
		return "", fmt.Errorf("the gateway's URL: %w", err)
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	case "http", "https":
	default:
		return "", fmt.Errorf("the gateway's URL %q: not ws, wss, http or https", gateway)
	}
	if space == "" {
		space = u.Query().Get("space")
	}
	u.Path, u.RawPath = "/participants/"+me+"/grants", "/participants/"+url.PathEscape(me)+"/grants"
	u.RawQuery, u.Fragment = "", ""
	if space != "" {
		u.RawQuery = url.Values{"space": {space}}.Encode()
	}
	return u.String(), nil
}

// fetchLedger asks the gateway at addr (a ledger URL) for the grants in
// force, with token as the bearer.
func fetchLedger(ctx context.Context, hc *http.Client, addr, token string) ([]LedgerGrant, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking the gateway for the grants: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLedgerBody))
	if err != nil {
		return nil, fmt.Errorf("reading the grants: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error, Message string
		}
		_ = json.Unmarshal(body, &e)
		return nil, fmt.Errorf("the gateway refused the grants' list: %s %s", resp.Status, termtext.Line(cmp.Or(e.Message, e.Error)))
	}
	var doc struct {
		Grants []struct {
			ID           string            `json:"id"`
			From         string            `json:"from"`
			To           string            `json:"to"`
			Capabilities []json.RawMessage `json:"capabilities"`
			GrantedAt    string            `json:"granted_at"`
			ExpiresAt    string            `json:"expires_at"`
		} `json:"grants"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("the gateway's grants: %w", err)
	}
	out := make([]LedgerGrant, 0, len(doc.Grants))
	for _, g := range doc.Grants {
		lg := LedgerGrant{ID: g.ID, From: g.From, To: g.To, Capabilities: g.Capabilities}
		lg.GrantedAt, _ = time.Parse(time.RFC3339Nano, g.GrantedAt)
		if g.ExpiresAt != "" {
			if lg.ExpiresAt, err = time.Parse(time.RFC3339Nano, g.ExpiresAt); err != nil {
				return nil, fmt.Errorf("grant %s: expires_at: %w", termtext.Line(g.ID), err)
			}
		}
		out = append(out, lg)
	}
	return out, nil
}

// ledger is the grants as the user knows them: their own, made in this
// session, and the space's as /grants last listed them, with those revoked
// since. It owns that state and the commands /grants and /revoke; the root
// hands it the events of grants and the ledger's answers.
type ledger struct {
	e     *env
	shown grantsShown // the board, which shows the grants in force

	mine    []*grant        // made in this session, numbered from 1
	listed  []LedgerGrant   // the space's grants as /grants last listed them; nil before
	revoked map[string]bool // ids of listed grants revoked since
}

// made records a grant the user makes.
func (l *ledger) made(g *grant) {
	g.n = len(l.mine) + 1
	l.mine = append(l.mine, g)
}

// list takes in the space's grants, as /grants read them.
func (l *ledger) list(gs []LedgerGrant) {
	l.listed, l.revoked = gs, map[string]bool{}
}

// refused marks the grants a system/error answers.
func (l *ledger) refused(env *protocol.Envelope, code string) {
	for _, g := range l.mine {
		if env.CorrelatesWith(g.id) {
			g.state = "refused: " + termtext.Line(code)
		}
	}
}

// acked marks the grants their recipient acknowledges.
func (l *ledger) acked(env *protocol.Envelope) {
	for _, g := range l.mine {
		if env.CorrelatesWith(g.id) && env.From == g.recipient && g.state == "" {
			g.state = "accepted"
		}
	}
}

// revoke marks listed grant n revoked and returns it, or why it cannot be.
func (l *ledger) revoke(n int) (LedgerGrant, string) {
	if n > len(l.listed) {
		return LedgerGrant{}, fmt.Sprintf("no grant %d; /grants lists them", n)
	}
	g := l.listed[n-1]
	if l.revoked[g.ID] {
		return LedgerGrant{}, fmt.Sprintf("grant %d was revoked already", n)
	}
	l.revoked[g.ID] = true
	for _, mine := range l.mine {
		if mine.id == g.ID {
			mine.state = "revoked"
		}
	}
	return g, ""
}

// sessionRevokes are the capability/revoke envelopes of the user's grants
// for this session still in force at now.
func (l *ledger) sessionRevokes(now time.Time) []*protocol.Envelope {
	var out []*protocol.Envelope
	for _, g := range l.mine {
		if g.life.session && g.active(now) {
			if env, err := revokeEnvelope(g); err == nil {
				out = append(out, env)
			}
		}
	}
	return out
}

// ledgerMsg brings the ledger to the model: for /grants (revoke 0) or for
// /revoke N when no list had been shown yet.
type ledgerMsg struct {
	grants []LedgerGrant
	err    error
	revoke int
}

// errNoLedger is the answer of a Space that cannot read the ledger.
var errNoLedger = errors.New("this connection cannot read the gateway's grants")

// grantsShown is where the grants in force are shown besides /grants: the
// board, told of the ledger read and of a grant revoked.
type grantsShown interface {
	showGrants(gs []LedgerGrant)
	forgetGrant(id string)
}

func (l *ledger) cmdGrants([]string) tea.Cmd { return l.e.fetchGrants(0) }

func (l *ledger) cmdRevoke(args []string) tea.Cmd {
	if len(args) == 0 {
		l.e.note("/revoke N: the number /grants shows", true)
		return nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(args[0], "#"))
	if err != nil || n < 1 {
		l.e.note("no grant "+termtext.Line(args[0])+"; /grants lists them", true)
		return nil
	}
	if l.listed == nil {
		return l.e.fetchGrants(n)
	}
	return l.revokeListed(n)
}

// got shows the ledger read, or revokes from it.
func (l *ledger) got(msg ledgerMsg) tea.Cmd {
	if msg.err != nil {
		l.e.note("/grants: "+termtext.Line(msg.err.Error()), true)
		return nil
	}
	l.list(msg.grants)
	l.shown.showGrants(msg.grants)
	if msg.revoke > 0 {
		return l.revokeListed(msg.revoke)
	}
	if len(l.listed) == 0 {
		l.e.note("no grants in force in the space (the approval dialog's Grant makes them)", false)
		return nil
	}
	lines := []string{"grants in force (/revoke N ends one):"}
	now := l.e.now()
	for i, g := range l.listed {
		lines = append(lines, fmt.Sprintf("  %d. %s → %s: %s · %s", i+1, l.e.who(g.From), termtext.Line(g.To), l.what(g), lifeLeft(g, now)))
	}
	l.e.note(strings.Join(lines, "\n"), false)
	return nil
}

// lifeLeft says how long g has left.
func lifeLeft(g LedgerGrant, now time.Time) string {
	switch {
	case g.ExpiresAt.IsZero():
		return "until revoked"
	case !now.Before(g.ExpiresAt):
		return "expiring"
	}
	return "expires in " + g.ExpiresAt.Sub(now).Round(time.Second).String()
}

// what says what g allows: the dialog's label for the user's own grants
// of this session, the patterns otherwise.
func (l *ledger) what(g LedgerGrant) string {
	for _, mine := range l.mine {
		if mine.id == g.ID {
			return mine.what
		}
	}
	parts := make([]string, 0, len(g.Capabilities))
	for _, c := range g.Capabilities {
		parts = append(parts, describePattern(c))
	}
	return clip.Runes(strings.Join(parts, "; "), 120)
}

// describePattern says what a capability pattern allows, in a few words:
// "add with any arguments" for a tool call, the pattern itself otherwise.
func describePattern(raw json.RawMessage) string {
	var p struct {
		Kind    string `json:"kind"`
		Payload struct {
			Method string `json:"method"`
			Params struct {
				Name      json.RawMessage `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		} `json:"payload"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return termtext.Line(clip.Runes(string(raw), 80))
	}
	if p.Kind == protocol.KindMCPRequest && p.Payload.Method == "tools/call" && len(p.Payload.Params.Name) > 0 {
		var name string
		var names []string
		switch {
		case json.Unmarshal(p.Payload.Params.Name, &name) == nil:
		case json.Unmarshal(p.Payload.Params.Name, &names) == nil:
			name = strings.Join(names, ", ")
		default:
			name = string(p.Payload.Params.Name)
		}
		what := termtext.Line(name)
		if len(p.Payload.Params.Arguments) > 0 {
			return what + " with " + termtext.Line(clip.Runes(string(p.Payload.Params.Arguments), 60))
		}
		return what + " with any arguments"
	}
	return termtext.Line(clip.Runes(string(raw), 80))
}

// revokeListed revokes grant n of the ledger last read.
func (l *ledger) revokeListed(n int) tea.Cmd {
	g, problem := l.revoke(n)
	if problem != "" {
		l.e.note(problem, true)
		return nil
	}
	env, err := protocol.New(protocol.KindCapabilityRevoke, protocol.Revoke{Recipient: g.To, GrantID: g.ID, Reason: "revoked in the terminal UI"})
	if err != nil {
		l.e.note(err.Error(), true)
		return nil
	}
	env.To = []string{g.To}
	l.shown.forgetGrant(g.ID)
	l.e.note(fmt.Sprintf("revoked grant %d: %s may no longer use %s without asking", n, termtext.Line(g.To), l.what(g)), false)
	return l.e.send(fmt.Sprintf("revoking grant %d", n), env)
}
