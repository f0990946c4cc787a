package gateway

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mew-protocol/mew/gateway/internal/notify"
	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/protocol"
)

// People reached where they are (docs/approvals.md, "Webhook"): when a
// governed proposal starts awaiting approvers, or is escalated to new
// ones, the space's webhook notifier (notify.webhook in space.yaml) is
// given one notification per approver who must act, each with a one-time
// console link of that approver's own that opens the proposal.

// Webhook notification bounds and link lifetimes.
const (
	// maxNoticeParams bounds the proposal's params carried as JSON; larger
	// ones are carried as an excerpt of this many bytes.
	maxNoticeParams = 4 << 10
	// maxNoticeNames bounds the names listed (approvers, to).
	maxNoticeNames = 64
	// maxNoticeText bounds the one-line summary.
	maxNoticeText = 512

	// A webhook link lives as long as the step's within_ms, within these
	// bounds, and defaultLinkTTL without one: long enough for a person to
	// read a chat message, not for ever.
	minLinkTTL     = 15 * time.Minute
	maxLinkTTL     = 24 * time.Hour
	defaultLinkTTL = time.Hour
)

// Webhook events.
const (
	eventAwaiting  = "approval.awaiting"
	eventEscalated = "approval.escalated"
)

// notice is the body of a webhook notification. The notifier adds link and
// link_expires_at.
type notice struct {
	ID            string          `json:"id"`
	Event         string          `json:"event"`
	Space         string          `json:"space"`
	Proposal      string          `json:"proposal"`
	Rule          string          `json:"rule"`
	Reason        string          `json:"reason,omitempty"`
	State         string          `json:"state"`
	Proposer      string          `json:"proposer"`
	Approver      string          `json:"approver"`
	Approvers     []string        `json:"approvers"`
	Required      int             `json:"required"`
	Remaining     int             `json:"remaining"`
	Deadline      string          `json:"deadline,omitempty"`
	Method        string          `json:"method"`
	Params        json.RawMessage `json:"params,omitempty"`
	ParamsExcerpt string          `json:"params_excerpt,omitempty"`
	ParamsBytes   int             `json:"params_bytes,omitempty"`
	To            []string        `json:"to,omitempty"`
	Text          string          `json:"text"`
	CreatedAt     string          `json:"created_at"`
}

// startNotifiers starts the webhook notifier of each space that has one,
// reading its secret; on an error none is left running.
func (srv *Server) startNotifiers() error {
	started := false
	for _, sp := range srv.order {
		w := sp.cfg.Notify.Webhook
		if w == nil {
			continue
		}
		secret, err := w.Secret(sp.cfg)
		if err != nil {
			srv.closeNotifiers()
			return fmt.Errorf("gateway: space %s: %w", sp.id, err)
		}
		name := sp.id
		if node := srv.opts.Cluster.Node; node != nil {
			// The nodes of a cluster may serve the space from one
			// directory (mew space up --nodes): each spools its own.
			name += "@" + node.ID()
		}
		n, err := notify.New(notify.Config{
			URL: w.URL, Secret: secret,
			Dir: filepath.Join(sp.cfg.MewDir, "notify"), Name: name,
			Timeout: w.Timeout, MaxAttempts: w.MaxAttempts, Backoff: w.Backoff,
			Link: sp.webhookLink,
			// Its clock is the real one, not Options.Now: receivers
			// compare the timestamps with theirs, and retries wait in
			// real time.
			Logger: srv.opts.Logger.With("space", sp.id),
		})
		if err != nil {
			srv.closeNotifiers()
			return fmt.Errorf("gateway: space %s: notify.webhook: %w", sp.id, err)
		}
		sp.approvals.notifier = n
		started = true
	}
	if started {
		srv.registerNotifyMetrics()
	}
	return nil
}

// closeNotifiers stops the notifiers; what is pending stays in their
// spools for the next start.
func (srv *Server) closeNotifiers() {
	for _, sp := range srv.order {
		if n := sp.approvals.notifier; n != nil {
			_ = n.Close()
		}
	}
}

// registerNotifyMetrics exports the notifiers' counts, summed over the
// spaces.
func (srv *Server) registerNotifyMetrics() {
	sum := func(f func(notify.Stats) int64) func() float64 {
		return func() float64 {
			var t int64
			for _, sp := range srv.order {
				if n := sp.approvals.notifier; n != nil {
					t += f(n.Stats())
				}
			}
			return float64(t)
		}
	}
	srv.metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "mew_gateway_webhook_pending", Help: "Webhook notifications waiting for delivery.",
	}, sum(func(s notify.Stats) int64 { return s.Pending })))
	for _, c := range []struct {
		name, help string
		of         func(notify.Stats) int64
	}{
		{"delivered", "Webhook notifications delivered.", func(s notify.Stats) int64 { return s.Delivered }},
		{"retries", "Failed webhook attempts followed by another.", func(s notify.Stats) int64 { return s.Retries }},
		{"dead_letters", "Webhook notifications written to the dead-letter log.", func(s notify.Stats) int64 { return s.Dead }},
		{"refused", "Webhook notifications refused (a full queue, among them) and written to the dead-letter log.", func(s notify.Stats) int64 { return s.Refused }},
	} {
		srv.metrics.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "mew_gateway_webhook_" + c.name + "_total", Help: c.help,
		}, sum(c.of)))
	}
}

// notifyLocked gives the space's notifier one notification per approver
// of a's step who has yet to act (never its proposer). It never waits:
// the notifier's queue takes it or dead-letters it. mu must be held.
func (sp *liveSpace) notifyLocked(a *approval, now time.Time) {
	n := sp.approvals.notifier
	if n == nil {
		return
	}
	event := eventAwaiting
	if a.phase == 1 {
		event = eventEscalated
	}
	base := notice{
		Event: event, Space: sp.id, Proposal: a.id, Rule: a.rule.cfg.Name, Reason: a.rule.cfg.Reason,
		State: a.state, Proposer: a.proposer, Approvers: names(a.step.Approvers), Required: a.step.Required,
		Remaining: a.step.Required - len(a.votes), To: names(a.to), CreatedAt: protocol.FormatTime(now),
	}
	if !a.deadline.IsZero() {
		base.Deadline = protocol.FormatTime(a.deadline)
	}
	var params []byte
	base.Method, params = splitCall(a.call)
	if len(params) <= maxNoticeParams {
		base.Params = params
	} else {
		base.ParamsExcerpt, base.ParamsBytes = clip.Mark(string(params), maxNoticeParams), len(params)
	}
	base.Text = noticeText(&base, params)
	ttl := defaultLinkTTL
	if w := a.step.Within; w > 0 {
		ttl = min(max(w, minLinkTTL), maxLinkTTL)
	}
	for _, name := range a.step.Approvers {
		if name == a.proposerM.name || slices.Contains(a.votes, name) {
			continue
		}
		nt := base
		nt.ID, nt.Approver = rand.Text(), name
		body, err := json.Marshal(nt)
		if err != nil {
			continue // a struct of strings and valid JSON marshals
		}
		n.Enqueue(&notify.Message{ID: nt.ID, Recipient: name, Subject: a.id, LinkTTL: ttl, Body: body, Created: now})
	}
}

// webhookLink mints the one-time console link of a notification: a code
// of the approver's own, through the one credentials table, that opens the
// console on the proposal. The notifier calls it from its worker, with no
// lock held. Without a console (Options.Console.Off) there is no link.
func (sp *liveSpace) webhookLink(m *notify.Message) (string, time.Time, error) {
	if sp.srv.opts.Console.Off {
		return "", time.Time{}, nil
	}
	sp.mu.Lock()
	mem := sp.members[m.Recipient]
	sp.mu.Unlock()
	if mem == nil {
		return "", time.Time{}, fmt.Errorf("%s is no participant of space %s", m.Recipient, sp.id)
	}
	code, expires, err := sp.srv.creds.mint(sp, mem, credLink, "", sp.srv.now(), m.LinkTTL)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("link for %s: %w", m.Recipient, err)
	}
	q := url.Values{"code": {code}, "space": {sp.id}, "proposal": {m.Subject}}
	return sp.cfg.Notify.Webhook.ConsoleURL + "/console/#" + q.Encode(), expires, nil
}

// splitCall undoes callOf: the method and the compact params.
func splitCall(call []byte) (string, []byte) {
	method, params := callParts(call)
	return clip.Mark(method, 256), params
}

// noticeText is the notification's one line, for a chat message.
func noticeText(nt *notice, params []byte) string {
	what := nt.Method
	var p struct {
		Name string `json:"name"`
	}
	if nt.Method == "tools/call" && json.Unmarshal(params, &p) == nil && p.Name != "" {
		what = "calling " + clip.Mark(p.Name, 64)
	}
	var b strings.Builder
	if nt.Event == eventEscalated {
		b.WriteString("Escalated to you: ")
	}
	fmt.Fprintf(&b, "%s proposes %s", nt.Proposer, what)
	if len(nt.To) > 0 {
		b.WriteString(" on " + strings.Join(nt.To, ", "))
	}
	fmt.Fprintf(&b, "; %d of %s must approve under the rule %s", nt.Required, strings.Join(nt.Approvers, ", "), nt.Rule)
	if nt.Reason != "" {
		b.WriteString(" (" + nt.Reason + ")")
	}
	if nt.Deadline != "" {
		b.WriteString(", by " + nt.Deadline)
	}
	b.WriteString(".")
	return clip.Mark(b.String(), maxNoticeText)
}

// names bounds a list of names.
func names(list []string) []string {
	return slices.Clone(list[:min(len(list), maxNoticeNames)])
}
