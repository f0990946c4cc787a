package gateway_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/protocol"
)

// chainSpace: an administrator who may do anything, and three participants
// who hold only chat until someone grants them more.
const chainSpace = `
space: {id: chain}
participants:
  admin:
    tokens: [admin-token]
    capabilities: [{kind: "*"}]
  p1:
    tokens: [p1-token]
    capabilities: [{kind: chat}]
  p2:
    tokens: [p2-token]
    capabilities: [{kind: chat}]
  p3:
    tokens: [p3-token]
    capabilities: [{kind: chat}]
`

const (
	kindRequest = `{"kind":"mcp/request"}`
	kindGrant   = `{"kind":"capability/grant"}`
)

// mcpRequest is an mcp/request with id, which only a holder of mcp/request may
// send.
func mcpRequest(id string) string {
	return `{"id":"` + id + `","kind":"mcp/request","to":["admin"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`
}

// grantEnv is a capability/grant of patterns to recipient; extra is added to
// the payload as it is (`"ttl_seconds":2`, `"session":true`).
func grantEnv(id, recipient string, patterns []string, extra string) string {
	p := `"recipient":"` + recipient + `","capabilities":[` + strings.Join(patterns, ",") + `]`
	if extra != "" {
		p += "," + extra
	}
	return `{"id":"` + id + `","kind":"capability/grant","to":["` + recipient + `"],"payload":{` + p + `}}`
}

// allowed sends env as p and reports whether the gateway relayed it (p sees
// its own envelope) rather than refusing it.
func allowed(t *testing.T, p *pipePeer, id, env string) bool {
	t.Helper()
	p.send(t, env)
	synctest.Wait()
	// What is not addressed to p waits for its writer's gathering (2 ms).
	time.Sleep(10 * time.Millisecond)
	synctest.Wait()
	switch {
	case p.errorFor(id) != "":
		return false
	case p.byID(id) != nil:
		return true
	}
	t.Fatalf("%s: neither relayed nor refused", id)
	return false
}

// TestExpiryDecidedWhenJudged: an envelope sent 200 ms after its grant's
// expires_at is refused, although the watchdog's next tick (once a second)
// is 700 ms away.
func TestExpiryDecidedWhenJudged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now() // the watchdog ticks at t0 + whole seconds
		b := startBubble(t, chainSpace, gateway.Options{})
		admin := pipeJoin(t, b.tr, "admin-token")
		p1 := pipeJoin(t, b.tr, "p1-token")
		expires := protocol.FormatTime(t0.Add(5100 * time.Millisecond))
		if !allowed(t, admin, "g1", grantEnv("g1", "p1", []string{kindRequest}, `"expires_at":"`+expires+`"`)) {
			t.Fatalf("grant refused: %s", admin.errorFor("g1"))
		}
		time.Sleep(time.Until(t0.Add(5 * time.Second)))
		if !allowed(t, p1, "before", mcpRequest("before")) {
			t.Fatalf("100 ms before its end the grant allowed nothing: %s", p1.errorFor("before"))
		}
		time.Sleep(time.Until(t0.Add(5300 * time.Millisecond)))
		if allowed(t, p1, "after", mcpRequest("after")) {
			t.Fatal("200 ms after expires_at the grant still allowed a request")
		}
		if admin.byID("after") != nil {
			t.Error("the request sent after the grant's end reached the admin")
		}
	})
}

// TestSessionGrantEndsWithGranter: a grant "for this session" outlives its
// granter's connection by the grace period only; a reconnect within it
// keeps the grant; what was granted on its strength ends with it; over
// HTTP, which has no session to last as long as, it is refused.
func TestSessionGrantEndsWithGranter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := startBubble(t, chainSpace, gateway.Options{Timing: gateway.Timing{SessionGrantGrace: 2 * time.Second}})
		admin := pipeJoin(t, b.tr, "admin-token")
		p1 := pipeJoin(t, b.tr, "p1-token")
		p2 := pipeJoin(t, b.tr, "p2-token")
		if !allowed(t, admin, "s1", grantEnv("s1", "p1", []string{kindRequest, kindGrant}, `"session":true`)) {
			t.Fatalf("session grant refused: %s", admin.errorFor("s1"))
		}
		// p1 hands mcp/request on, for no set time: it lives no longer.
		if !allowed(t, p1, "c1", grantEnv("c1", "p2", []string{kindRequest}, "")) {
			t.Fatalf("p1's grant refused: %s", p1.errorFor("c1"))
		}
		admin.close()
		time.Sleep(time.Second)
		if !allowed(t, p2, "r1", mcpRequest("r1")) {
			t.Fatal("within the grace period the child grant allowed nothing")
		}
		admin = pipeJoin(t, b.tr, "admin-token") // back within the grace period
		time.Sleep(5 * time.Second)
		if !allowed(t, p1, "r2", mcpRequest("r2")) || !allowed(t, p2, "r3", mcpRequest("r3")) {
			t.Fatal("after a reconnect within the grace period the grants were gone")
		}
		admin.close()
		time.Sleep(2100 * time.Millisecond)
		if allowed(t, p1, "r4", mcpRequest("r4")) {
			t.Error("the session grant outlived its granter's departure")
		}
		if allowed(t, p2, "r5", mcpRequest("r5")) {
			t.Error("a grant made on the strength of the session grant outlived it")
		}
		if w := p2.last("system/welcome"); w == nil || strings.Contains(string(w.raw), "mcp/request") {
			t.Errorf("p2's last welcome still lists mcp/request: %v", w)
		}
		if !strings.Contains(b.logs.String(), "its granter admin left") {
			t.Errorf("the gateway's log does not say why the grant ended:\n%s", b.logs.String())
		}

		// Over HTTP there is no connection to be bound to.
		req, _ := http.NewRequest(http.MethodPost, "http://localhost/participants/admin/messages",
			strings.NewReader(grantEnv("h1", "p1", []string{kindRequest}, `"session":true`)))
		req.Header.Set("Authorization", "Bearer admin-token")
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Transport: b.tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("a session grant over HTTP was accepted (%d)", resp.StatusCode)
		}
	})
}

// chainModel is what the property test knows of the space: the grants the
// gateway accepted, and each participant's presence and standing. It says
// whether some chain of live grants leads from the space's configuration
// to a participant for a pattern; it never looks at how the gateway decided.
type chainModel struct {
	grace   time.Duration
	grants  []*modelGrant // in the order the gateway accepted them
	away    map[string]time.Time
	present map[string]bool
	kicked  map[string]bool
}

type modelGrant struct {
	id       string
	from, to string
	patterns []string
	expires  time.Time // zero: none
	session  bool
	revoked  bool
}

// holds reports whether p holds pattern at now through the configuration or
// a live chain of grants older than the index before.
func (m *chainModel) holds(p, pattern string, now time.Time, before int) bool {
	if m.kicked[p] {
		return false
	}
	if p == "admin" {
		return true // static {kind: "*"}
	}
	for i, g := range m.grants[:before] {
		if g.to == p && slices.Contains(g.patterns, pattern) && m.alive(i, pattern, now) {
			return true
		}
	}
	return false
}

// alive reports whether grant i still gives pattern at now: not revoked,
// not expired, its granter and holder not kicked, its granter present (or
// gone less than the grace) if it is bound to its presence, and its
// granter still holding the pattern through an older chain.
func (m *chainModel) alive(i int, pattern string, now time.Time) bool {
	g := m.grants[i]
	switch {
	case g.revoked, m.kicked[g.from], m.kicked[g.to]:
		return false
	case !g.expires.IsZero() && !now.Before(g.expires):
		return false
	case g.session && !m.present[g.from] && !now.Before(m.away[g.from].Add(m.grace)):
		return false
	}
	return m.holds(g.from, pattern, now, i)
}

// TestGrantChainProperty drives random sequences of grant (none, a
// lifetime, for the session), re-grant, revoke, expiry, kick, leave and
// reconnect through a real gateway and, at every step, asks each connected
// participant to send what only a holder of mcp/request may send: the
// gateway may relay it only if some chain of live grants from the space's
// configuration to the sender exists, and may accept a grant only from a
// participant holding, through such a chain, every pattern it grants.
func TestGrantChainProperty(t *testing.T) {
	const grace = 1500 * time.Millisecond
	for seed := range uint64(12) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runChainProperty(t, seed, grace) })
		})
	}
}

func runChainProperty(t *testing.T, seed uint64, grace time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 0x6d6577))
	b := startBubble(t, chainSpace, gateway.Options{Timing: gateway.Timing{SessionGrantGrace: grace}})
	names := []string{"admin", "p1", "p2", "p3"}
	model := &chainModel{grace: grace, away: map[string]time.Time{}, present: map[string]bool{}, kicked: map[string]bool{}}
	peers := map[string]*pipePeer{}
	connect := func(p string) {
		peers[p] = pipeJoin(t, b.tr, p+"-token")
		model.present[p] = true
	}
	for _, p := range names {
		connect(p)
	}
	pick := func(from []string) string { return from[rng.IntN(len(from))] }
	seq := 0
	next := func(prefix string) string { seq++; return fmt.Sprintf("%s%d", prefix, seq) }
	var trace []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, after:\n  %s\n"+format, append([]any{seed, strings.Join(trace, "\n  ")}, args...)...)
	}
	checked, refusedButHeld := 0, 0
	for range 120 {
		now := time.Now()
		var connected []string
		for _, p := range names {
			if model.present[p] && !model.kicked[p] {
				connected = append(connected, p)
			}
		}
		switch op := rng.IntN(10); {
		case op < 5 && len(connected) > 0: // grant, or re-grant what one holds
			// Mostly from someone who may grant, so that chains grow deep.
			from := pick(connected)
			var granters []string
			for _, p := range connected {
				if p != "admin" && model.holds(p, kindGrant, now, len(model.grants)) {
					granters = append(granters, p)
				}
			}
			if len(granters) > 0 && rng.IntN(4) != 0 {
				from = pick(granters)
			}
			to := pick(names)
			var pats []string
			for _, pat := range []string{kindRequest, kindGrant} {
				if rng.IntN(2) == 0 || pat == kindRequest {
					pats = append(pats, pat)
				}
			}
			g := &modelGrant{from: from, to: to, patterns: pats}
			extra := ""
			switch rng.IntN(3) {
			case 0:
				g.expires = now.Add(time.Duration(5+rng.IntN(40)) * 100 * time.Millisecond)
				extra = `"expires_at":"` + protocol.FormatTime(g.expires) + `"`
			case 1:
				g.session, extra = true, `"session":true`
			}
			g.id = next("g")
			ok := allowed(t, peers[from], g.id, grantEnv(g.id, to, pats, extra))
			trace = append(trace, fmt.Sprintf("%v %s grants %s %v %s: %v %s", now.Format("05.000"), from, to, pats, extra, ok, peers[from].errorFor(g.id)))
			if !ok {
				break
			}
			if to == from || model.kicked[to] {
				fail("the gateway accepted grant %s to %s from %s", g.id, to, from)
			}
			canGrant := model.holds(from, kindGrant, now, len(model.grants))
			for _, pat := range pats {
				if !canGrant || !model.holds(from, pat, now, len(model.grants)) {
					fail("the gateway accepted %s from %s, who holds no live chain for %s and capability/grant", g.id, from, pat)
				}
			}
			model.grants = append(model.grants, g)
		case op < 6 && model.present["admin"] && len(model.grants) > 0: // revoke
			g := model.grants[rng.IntN(len(model.grants))]
			id := next("v")
			peers["admin"].send(t, `{"id":"`+id+`","kind":"capability/revoke","payload":{"recipient":"`+g.to+`","grant_id":"`+g.id+`"}}`)
			synctest.Wait()
			g.revoked = true
			trace = append(trace, fmt.Sprintf("admin revokes %s", g.id))
		case op < 7: // time passes: lifetimes and grace periods run out
			d := time.Duration(1+rng.IntN(20)) * 100 * time.Millisecond
			time.Sleep(d)
			trace = append(trace, fmt.Sprintf("%v pass", d))
		case op < 8 && len(connected) > 1: // leave
			p := pick(connected)
			peers[p].close()
			synctest.Wait()
			model.present[p], model.away[p] = false, time.Now()
			trace = append(trace, p+" leaves")
		case op < 9: // reconnect
			for _, p := range names {
				if !model.present[p] && !model.kicked[p] {
					connect(p)
					trace = append(trace, p+" reconnects")
					break
				}
			}
		default: // kick, rarely, never the administrator
			if rng.IntN(4) != 0 || !model.present["admin"] {
				break
			}
			p := pick(names[1:])
			if model.kicked[p] {
				break
			}
			id := next("k")
			peers["admin"].send(t, `{"id":"`+id+`","kind":"space/kick","payload":{"participant_id":"`+p+`"}}`)
			synctest.Wait()
			model.kicked[p], model.present[p] = true, false
			trace = append(trace, "admin kicks "+p)
		}
		// Every connected participant tries what needs mcp/request.
		now = time.Now()
		for _, p := range names {
			if !model.present[p] || model.kicked[p] {
				continue
			}
			id := next("r")
			got := allowed(t, peers[p], id, mcpRequest(id))
			want := model.holds(p, kindRequest, now, len(model.grants))
			checked++
			switch {
			case got && !want:
				fail("%s's request %s was relayed with no live chain of grants to it", p, id)
			case !got && want:
				refusedButHeld++ // a chain the gateway did not lean on; sound, if stricter
			}
		}
	}
	t.Logf("seed %d: %d requests judged, %d grants accepted, %d refused although another chain held", seed, checked, len(model.grants), refusedButHeld)
}
