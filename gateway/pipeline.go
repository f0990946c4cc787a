package gateway

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mew-protocol/mew/gateway/internal/audit"
	"github.com/mew-protocol/mew/protocol"
)

// origin is who sent something, and how.
type origin struct {
	m         *member
	id        string   // runtime id
	s         *session // nil for an HTTP post by a participant that has no connection
	transport string
}

// inState holds what one reader reuses from one envelope to the next.
type inState struct {
	dec protocol.Decoder
	env protocol.Envelope
}

// result is what the gateway made of an accepted envelope.
type result struct {
	id     string
	ts     time.Time
	status int // HTTP answer, when a handler chose one
	body   any
}

// inbound runs one envelope through the gateway: rate limit, decoding,
// identity, validation, reserved kinds, capabilities, then delivery. A
// refusal carries the id the sender gave, if any, for correlation.
func (sp *liveSpace) inbound(o origin, data []byte, st *inState) (result, *refusal) {
	srv := sp.srv
	start := nanotime()
	if lim := o.m.limiter; lim != nil && !lim.allow(len(data)) {
		return result{}, overLimit(srv.opts)
	}
	env := &st.env
	if err := st.dec.Decode(data, env); err != nil {
		if j, ok := parseJoin(data); ok {
			return sp.rejoin(o, j)
		}
		r := refuse(ErrorInvalidEnvelope, err.Error())
		r.ref = protocol.PeekID(data) // correlate the refusal when the id can be read
		return result{}, r
	}
	given := env.ID
	fail := func(r *refusal) (result, *refusal) {
		r.ref = given
		if r.code != ErrorInvalidEnvelope || env.Kind != "" {
			r.envelope = auditCopy(env)
		}
		return result{}, r
	}
	if env.Kind == "" || env.Kind == protocol.KindSystemJoin {
		if j, ok := parseJoin(data); ok {
			return sp.rejoin(o, j)
		}
	}
	if protocol.IsGatewayOnly(env.Kind) {
		msg := env.Kind + " is reserved for the gateway"
		if env.Kind == "system/register" {
			msg = "system/register is reserved for the gateway. Use capability/grant instead."
		}
		if env.Kind != protocol.KindSystemHeartbeat {
			return fail(refuse(ErrorReservedKind, msg))
		}
	}
	switch env.From {
	case "":
		env.From = o.id
	case o.id, o.m.name:
	default:
		return fail(refuse(ErrorIdentityMismatch, fmt.Sprintf("from is %q but you are %q", env.From, o.id)))
	}
	now := srv.now()
	if env.ID == "" {
		env.ID = protocol.NewID()
	}
	if env.TS == "" {
		env.TS = protocol.FormatTime(now)
	}
	if env.Protocol == "" {
		env.Protocol = protocol.Version
	}
	normalize(env)
	if err := env.Validate(); err != nil {
		return fail(refuse(ErrorInvalidEnvelope, err.Error()))
	}
	if env.Kind == protocol.KindSystemHeartbeat {
		// Reference clients send these; they keep nothing alive here
		// (WebSocket pings do) and are not relayed.
		return result{id: env.ID, ts: now}, nil
	}
	if rf := sp.checkControl(o, env.Kind, now); rf != nil {
		return fail(rf)
	}
	view := sp.viewAt(o.m, now)
	idx, ok := view.set.MatchTo(env.Kind, env.To, env.Payload)
	sp.decide(o, env, now, view, idx, ok)
	if !ok {
		r := refuse(ErrorCapabilityViolation, fmt.Sprintf("participant %s lacks capability for %s", o.id, env.Kind))
		kind, caps := env.Kind, view.array
		r.fields = func(dst []byte) []byte {
			dst = append(dst, `,"attempted_kind":`...)
			dst = protocol.AppendString(dst, kind)
			dst = append(dst, `,"your_capabilities":`...)
			return append(dst, caps...)
		}
		return fail(r)
	}

	oc, rf := sp.special(o, env, now)
	if rf != nil {
		return fail(rf)
	}
	out := env.AppendJSON(make([]byte, 0, len(data)+96))
	d := delivery{data: out, id: env.ID, kind: env.Kind, at: now, src: o.m, to: env.To}
	srv.audit.Envelope(audit.EnvelopeRecord{
		Time: now, Event: "received", ID: env.ID, Envelope: out,
		Participant: o.id, Space: sp.id, Transport: o.transport,
	})
	srv.metrics.received(env.Kind)
	if oc.relay {
		sp.mu.Lock()
		sp.broadcastLocked(d, nil)
		sp.mu.Unlock()
	}
	if oc.then != nil {
		oc.then()
	}
	srv.metrics.routing.Observe(float64(nanotime()-start) / 1e9)
	return result{id: env.ID, ts: now, status: oc.status, body: oc.body}, nil
}

// auditCopy encodes a refused envelope for the audit log. A join carries a
// token: its payload and extra members are left out.
func auditCopy(env *protocol.Envelope) []byte {
	if env.Kind != protocol.KindSystemJoin && !slices.ContainsFunc(env.Extra, func(f protocol.Field) bool { return f.Name == "token" }) {
		return env.AppendJSON(nil)
	}
	c := *env
	c.Payload, c.Extra = json.RawMessage(`{"redacted":"may hold a token"}`), nil
	return c.AppendJSON(nil)
}

// normalize moves tolerated input into its proper place before enforcement,
// so that what is checked, relayed and logged is the normalised form (the
// decoder has already made a lone string correlation_id a list): a
// reasoning/cancel that names its context in payload.context, as the
// reference's participants send it, gets it on the envelope.
func normalize(env *protocol.Envelope) {
	if env.Kind == protocol.KindReasoningCancel && env.Context == "" && len(env.Payload) > 0 {
		var p struct {
			Context string `json:"context"`
		}
		if env.DecodePayload(&p) == nil && p.Context != "" {
			env.Context = p.Context
		}
	}
}

// decide records a capability decision in the audit log.
func (sp *liveSpace) decide(o origin, env *protocol.Envelope, now time.Time, v *capView, idx int, ok bool) {
	rec := audit.DecisionRecord{
		Time: now, EnvelopeID: env.ID, Participant: o.id, Space: sp.id,
		Allowed: ok, Kind: env.Kind, Metadata: decisionMeta[o.transport],
	}
	if ok {
		var grantID string
		rec.Matched = v.list[idx]
		rec.Source, grantID = v.source(idx)
		if grantID != "" {
			// Which grant allowed it: the audit log's link to the grant chain.
			m := append([]byte(`{"source":`), decisionSource[o.transport]...)
			m = protocol.AppendString(append(m, `,"transport":`...), o.transport)
			m = protocol.AppendString(append(m, `,"grant_id":`...), grantID)
			rec.Metadata = append(m, '}')
		}
	} else {
		rec.Granted = v.array
	}
	sp.srv.audit.Decision(rec)
}

var decisionSource = map[string]string{
	transportWebSocket: `"websocket"`, transportHTTP: `"http_api"`, transportVirtual: `"virtual"`,
}

var decisionMeta = map[string][]byte{
	transportWebSocket: []byte(`{"source":"websocket","transport":"websocket"}`),
	transportHTTP:      []byte(`{"source":"http_api","transport":"http"}`),
	transportVirtual:   []byte(`{"source":"virtual","transport":"virtual"}`),
}

// rejoin answers a join sent on a connection that has already joined: the
// same token gets its welcome again, anything else is refused.
func (sp *liveSpace) rejoin(o origin, j joinRequest) (result, *refusal) {
	if o.s == nil {
		return result{}, refuse(ErrorReservedKind, "system/join is only the first message of a WebSocket connection")
	}
	if !o.m.ownsToken([]byte(j.token)) || (j.participantID != "" && j.participantID != o.id && j.participantID != o.m.name) {
		return result{}, refuse(ErrorIdentityMismatch, "this connection has already joined as "+o.id)
	}
	sp.mu.Lock()
	if sp.sessions[o.id] == o.s {
		sp.unicastLocked(o.s, sp.welcomeLocked(o.s))
	}
	sp.mu.Unlock()
	return result{}, nil
}

// answer tells the sender why its envelope was refused, and records it.
func (sp *liveSpace) answer(o origin, r *refusal) {
	srv := sp.srv
	srv.metrics.refusals.WithLabelValues(r.code).Inc()
	srv.audit.Envelope(audit.EnvelopeRecord{
		Time: srv.now(), Event: "rejected", ID: r.ref, Envelope: r.envelope,
		Participant: o.id, Space: sp.id, Transport: o.transport,
		Metadata: append(protocol.AppendString([]byte(`{"reason":`), r.code), '}'),
	})
	if o.s == nil {
		return
	}
	if r.code == ErrorRateLimited {
		// One answer per second is enough to tell a flooding sender; more
		// would only add to the flood.
		now := srv.now().UnixNano()
		last := o.s.lastRateEr.Load()
		if now-last < int64(time.Second) || !o.s.lastRateEr.CompareAndSwap(last, now) {
			return
		}
	}
	sp.unicast(o.s, sp.errorEnvelope(o.id, r))
}

// tellFlooder tells a sender, at most once a second, that some of its
// messages were shed for recipients that could not keep up with it.
func (sp *liveSpace) tellFlooder(o origin) {
	now := sp.srv.now().UnixNano()
	last := o.s.lastFlood.Load()
	if now-last < int64(time.Second) || !o.s.lastFlood.CompareAndSwap(last, now) {
		return
	}
	n := o.s.flooding.Swap(0)
	sp.answer(o, refuse(ErrorRateLimited, strconv.FormatInt(n, 10)+
		" of your messages were not delivered to participants that read slower than you send; slow down"))
}

// errorEnvelope encodes the system/error for a refusal.
func (sp *liveSpace) errorEnvelope(to string, r *refusal) delivery {
	p := append(make([]byte, 0, 128), `{"error":`...)
	p = protocol.AppendString(p, r.code)
	p = append(p, `,"message":`...)
	p = protocol.AppendString(p, r.message)
	if r.fields != nil {
		p = r.fields(p)
	}
	p = append(p, '}')
	env := protocol.Envelope{
		Protocol: protocol.Version, ID: protocol.NewID(), TS: protocol.FormatTime(sp.srv.now()),
		From: protocol.GatewayID, To: []string{to}, Kind: protocol.KindSystemError, Payload: p,
	}
	if r.ref != "" {
		env.CorrelationID = []string{r.ref}
	}
	return delivery{data: env.AppendJSON(nil), id: env.ID, kind: env.Kind, at: sp.srv.now()}
}

// joinRequest is what a join message asks for.
type joinRequest struct {
	participantID, space, token string
}

// parseJoin recognises the two join messages of reference clients:
// {"type":"join",...} and an envelope of kind system/join.
func parseJoin(data []byte) (joinRequest, bool) {
	var j struct {
		Type          string `json:"type"`
		Kind          string `json:"kind"`
		ParticipantID string `json:"participantId"`
		Space         string `json:"space"`
		Token         string `json:"token"`
		Payload       *struct {
			ParticipantID string `json:"participantId"`
			Participant   string `json:"participant"`
			Space         string `json:"space"`
			Token         string `json:"token"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(data, &j); err != nil || (j.Type != "join" && j.Kind != protocol.KindSystemJoin) {
		return joinRequest{}, false
	}
	r := joinRequest{participantID: j.ParticipantID, space: j.Space, token: j.Token}
	if p := j.Payload; p != nil {
		r.participantID = cmp.Or(r.participantID, p.ParticipantID, p.Participant)
		r.space = cmp.Or(r.space, p.Space)
		r.token = cmp.Or(r.token, p.Token)
	}
	return r, true
}

// tooLarge is the refusal of a message over the size limit.
func tooLarge(limit int64) *refusal {
	r := refuse(ErrorTooLarge, "message is larger than "+strconv.FormatInt(limit, 10)+" bytes")
	r.fields = func(dst []byte) []byte {
		return strconv.AppendInt(append(dst, `,"limit":`...), limit, 10)
	}
	return r
}
