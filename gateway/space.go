package gateway

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/mew-protocol/mew/capability"
	"github.com/mew-protocol/mew/gateway/internal/audit"
	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/protocol"
	"github.com/mew-protocol/mew/space"
)

// baselineCapability is added to every participant, as the reference gateway
// does: anyone asked something may answer.
var baselineCapability = json.RawMessage(`{"id":"mcp-response","kind":"mcp/response"}`)

// member is a logical participant of a space: a name from the space config
// (or an invitation), its tokens and capabilities, and its current
// connection, if any.
type member struct {
	name    string
	cfg     *space.Participant // nil for an invited participant
	tokens  [][]byte
	hashes  [][32]byte // SHA-256 of tokens known by hash only: an invitation made on another node
	limiter *limiter   // nil when rate limiting is off
	// standing is what its credentials are worth (credentials.go); read
	// without locks, changed under credentials.mu.
	standing atomic.Int32
	// tokenFile: its token was read from, or written to, the space's token
	// store, which the watchdog re-reads to notice a revocation.
	tokenFile bool
	fileToken string // the token last read from that file; the watchdog's alone

	static    []json.RawMessage       // own ∪ defaults ∪ baseline, compacted; fixed
	staticSet *capability.Set         // static, compiled once
	caps      atomic.Pointer[capView] // what the gateway enforces; replaced on grant and revoke

	// Guarded by liveSpace.mu:
	sess    *session  // current connection
	aliases int       // runtime ids bound to it in liveSpace.aliases
	grants  []grant   // runtime grants, oldest first
	away    time.Time // when its last connection in the cluster left; zero while connected (or never seen)
	yields  []string  // recent messages it was told to yield (floor control)
	ctl     control   // pause, shutdown and kick state
}

// capView is a member's effective capabilities: its static ones, then those
// of its grants, compiled into one set. It is immutable.
type capView struct {
	list    []json.RawMessage
	array   []byte // list as one JSON array
	set     *capability.Set
	static  int      // list[:static] are static
	grantOf []string // grant id of list[static+i]
	// until is the earliest effective end of its grants (zero: none):
	// from then on the grants must be settled before the view is used.
	until time.Time
}

func (m *member) view() *capView { return m.caps.Load() }

// source says where the pattern at index i of the view came from, and the
// grant id when it was granted.
func (v *capView) source(i int) (string, string) {
	if i < v.static {
		return "static", ""
	}
	return "dynamic", v.grantOf[i-v.static]
}

// ownsToken reports in constant time whether tok is one of m's tokens.
func (m *member) ownsToken(tok []byte) bool {
	ok := 0
	for _, t := range m.tokens {
		ok |= subtle.ConstantTimeCompare(t, tok)
	}
	if len(m.hashes) > 0 {
		h := tokenKey(tok)
		for _, k := range m.hashes {
			ok |= subtle.ConstantTimeCompare(k[:], h[:])
		}
	}
	return ok == 1
}

// maxAliasesPerMember bounds the runtime ids one participant may bind, so
// that no one can fill the space's alias table.
const maxAliasesPerMember = 64

// liveSpace is the running state of one space.
//
// Lock order: liveSpace.mu, then nothing: code holding mu only enqueues
// (which never blocks) and kills sessions (which takes no lock).
type liveSpace struct {
	id  string
	srv *Server
	cfg *space.Config

	mu            sync.Mutex
	members       map[string]*member  // by logical name; invitations add to it
	order         []*member           // members in config order, then invited ones
	sessions      map[string]*session // by runtime id
	aliases       map[string]*member  // runtime ids other than logical names, bound to who used them first
	roster        []*session          // sessions in join order; replaced, never modified
	recipients    []audit.Recipient   // parallel to roster; replaced, never modified
	history       *history
	streams       streamTable
	floor         floorTable
	approvals     approvalTable // the approval policy and the proposals it governs (approvals.go)
	grantsDue     time.Time     // the earliest effective end of a grant (provenance.go)
	sessionGrants int           // grants bound to their granter's presence
	ended         endedGrants   // ids of grants that ended here, for their children (provenance.go)
	tokWatch      tokenWatch
	link          spaceLink // solo on a single node; clusterSpace in a cluster (link.go)
}

func newLiveSpace(srv *Server, cfg *space.Config) (*liveSpace, error) {
	sp := &liveSpace{
		id: cfg.Space.ID, srv: srv, cfg: cfg,
		members:  make(map[string]*member, len(cfg.Participants)),
		sessions: make(map[string]*session),
		aliases:  make(map[string]*member),
		history:  newHistory(srv.opts.Limits.HistorySize, srv.opts.Limits.HistoryBytes),
	}
	sp.link = solo{sp}
	var err error
	if sp.approvals, err = newApprovalTable(cfg); err != nil {
		return nil, fmt.Errorf("gateway: space %s: %w", sp.id, err)
	}
	store := srv.opts.TokenStore(cfg)
	for _, p := range cfg.Participants {
		toks, err := store.Tokens(p)
		if err != nil {
			return nil, fmt.Errorf("gateway: space %s: participant %s: %w", sp.id, p.ID, err)
		}
		m := &member{name: p.ID, cfg: p, tokenFile: store.FromFile(p)}
		for _, t := range toks {
			m.tokens = append(m.tokens, []byte(t))
		}
		if m.tokenFile && len(toks) == 1 {
			m.fileToken = toks[0]
		}
		own := p.Capabilities
		if approver(cfg, p.ID) {
			own = append(slices.Clone(own), approveCapability)
		}
		if err := m.setCapabilities(own, cfg.Defaults.Capabilities); err != nil {
			return nil, fmt.Errorf("gateway: space %s: participant %s: %w", sp.id, p.ID, err)
		}
		if srv.opts.Limits.Rate > 0 {
			m.limiter = newLimiter(srv.opts)
		}
		sp.members[p.ID] = m
		sp.order = append(sp.order, m)
	}
	return sp, nil
}

// setCapabilities sets m's static capabilities to own ∪ defaults ∪ the
// baseline, without repeats, in that order.
func (m *member) setCapabilities(own, defaults []json.RawMessage) error {
	var list []json.RawMessage
	seen := make(map[string]bool)
	for _, group := range [][]json.RawMessage{own, defaults, {baselineCapability}} {
		for _, c := range group {
			var buf bytes.Buffer
			if err := json.Compact(&buf, c); err != nil {
				return fmt.Errorf("capability %s: %w", c, err)
			}
			if seen[buf.String()] {
				continue
			}
			seen[buf.String()] = true
			list = append(list, json.RawMessage(buf.Bytes()))
		}
	}
	m.static, m.staticSet = list, nil
	return m.rebuildCaps()
}

// rebuildCaps compiles the static capabilities and the grants into a new
// view. Called at creation and, with liveSpace.mu held, on grant and revoke.
func (m *member) rebuildCaps() error {
	if m.staticSet == nil {
		set, err := capability.Compile(m.static)
		if err != nil {
			return err
		}
		m.staticSet = set
	}
	v := &capView{list: slices.Clone(m.static), static: len(m.static)}
	sets := []*capability.Set{m.staticSet}
	for _, g := range m.grants {
		if g.waiting {
			continue
		}
		v.until = earliest(v.until, g.until)
		for _, c := range g.caps {
			v.list = append(v.list, c)
			v.grantOf = append(v.grantOf, g.id)
		}
		sets = append(sets, g.set) // compiled when granted: nothing is compiled twice
	}
	arr, err := protocol.Marshal(v.list)
	if err != nil {
		return err
	}
	v.set, v.array = capability.Join(sets...), arr
	m.caps.Store(v)
	return nil
}

// limiter is a participant's budget for everything it sends, envelopes and
// stream frames on all its streams together: a number of messages and a
// number of bytes per second.
type limiter struct {
	msgs, bytes *rate.Limiter
}

func newLimiter(o Options) *limiter {
	return &limiter{
		msgs:  rate.NewLimiter(rate.Limit(o.Limits.Rate), o.Limits.Burst),
		bytes: rate.NewLimiter(rate.Limit(o.Limits.ByteRate), o.Limits.ByteBurst),
	}
}

// allow takes one message of n bytes from the budget, or reports false.
func (l *limiter) allow(n int) bool {
	return l.msgs.Allow() && l.bytes.AllowN(time.Now(), n)
}

// overLimit is the refusal of a message over its sender's budget.
func overLimit(o Options) *refusal {
	return refuse(ErrorRateLimited, fmt.Sprintf("over the rate limit of %g messages or %d bytes per second", o.Limits.Rate, o.Limits.ByteRate))
}

func tokenKey(tok []byte) [32]byte { return sha256.Sum256(tok) }

// joinRosterLocked adds s, just attached, at the end of the roster. The
// roster and recipients are appended to in place: whoever holds an earlier
// slice of them reads only within its length, which no append changes.
// mu must be held.
func (sp *liveSpace) joinRosterLocked(s *session) {
	sp.roster = append(sp.roster, s)
	sp.recipients = append(sp.recipients, audit.Recipient{ID: s.id, Transport: s.transport})
}

// leaveRosterLocked replaces the roster with one without s, in the same
// order. mu must be held.
func (sp *liveSpace) leaveRosterLocked(s *session) {
	i := slices.Index(sp.roster, s)
	if i < 0 {
		return
	}
	roster := make([]*session, 0, len(sp.roster)-1)
	sp.roster = append(append(roster, sp.roster[:i]...), sp.roster[i+1:]...)
	rcpts := make([]audit.Recipient, 0, len(sp.recipients)-1)
	sp.recipients = append(append(rcpts, sp.recipients[:i]...), sp.recipients[i+1:]...)
}

// attach makes s the connection of its member, replacing any earlier one,
// and sends the welcome and presence. It refuses a runtime id that belongs to
// someone else.
func (sp *liveSpace) attach(s *session) *refusal {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if st := s.m.standingOf(); st != standingGood {
		// Its credential was good when the join was looked up, and ended
		// since (a kick racing the join).
		return refuse(ErrorUnauthorized, s.m.name+" is "+st.String())
	}
	if other, ok := sp.members[s.id]; ok && other != s.m {
		return refuse(ErrorIdentityMismatch, fmt.Sprintf("participant id %q belongs to another participant", s.id))
	}
	if cur, ok := sp.sessions[s.id]; ok && cur.m != s.m {
		return refuse(ErrorIdentityMismatch, fmt.Sprintf("participant id %q is in use", s.id))
	}
	if s.id != s.m.name {
		// An alias stays its first user's for the gateway's run: envelopes
		// addressed to it, and grants, pauses and kicks naming it, must
		// never reach someone else who takes the name later.
		switch owner, ok := sp.aliases[s.id]; {
		case ok && owner != s.m:
			return refuse(ErrorIdentityMismatch, fmt.Sprintf("participant id %q was used by another participant", s.id))
		case !ok && s.m.aliases >= maxAliasesPerMember:
			return refuse(ErrorIdentityMismatch, fmt.Sprintf("%s has used %d runtime ids already; join under one of them", s.m.name, maxAliasesPerMember))
		case !ok:
			sp.aliases[s.id] = s.m
			s.m.aliases++
			sp.link.aliasLocked(s.id, s.m) // bound in the whole cluster
		}
	}
	if old := s.m.sess; old != nil {
		old.kill(CloseReplaced, "replaced by a new connection of the same participant")
		sp.detachLocked(old)
	}
	s.m.sess = s
	if s.m.ctl.shutdown.Swap(false) {
		// A shut-down participant takes part again by reconnecting, on
		// every node: else another node's next control record would
		// carry the old shutdown back.
		sp.link.controlLocked(s.m, "")
	}
	sp.presenceChangedLocked(s.m, true, sp.srv.now())
	sp.sessions[s.id] = s
	sp.joinRosterLocked(s)
	sp.srv.metrics.connections.WithLabelValues(s.transport).Inc()
	sp.srv.trim.moved()
	sp.link.joinLocked(s)

	sp.unicastLocked(s, sp.welcomeLocked(s))
	if s.resume != "" {
		sp.replayLocked(s)
	}
	sp.broadcastLocked(sp.presenceEnvelope(protocol.PresenceJoin, protocol.ParticipantInfo{ID: s.id, Capabilities: s.m.view().list}), s)
	return nil
}

// resumeSkew is how far before the envelope a resuming client names a node
// of a cluster replays from: envelopes accepted on different nodes may have
// been delivered in another order on the node the client left.
const resumeSkew = 2 * time.Second

// replayLocked sends s, just welcomed, what its participant missed after
// the envelope it named (s.resume), from the node's history, before
// anything else: nothing between the two is lost or doubled on one node.
// When the envelope is not in the history any more, s is told
// (ErrorResumeGap) and polls for what is kept. mu must be held.
func (sp *liveSpace) replayLocked(s *session) {
	entries, found := sp.history.resume(s.resume, sp.link.resumeSkew(), s.m)
	if !found {
		sp.unicastLocked(s, sp.errorEnvelope(s.id, refuse(ErrorResumeGap, fmt.Sprintf(
			"envelope %s is not in this node's history (it keeps the last %d envelopes): what you missed after it cannot be replayed; GET /participants/%s/messages has what is kept",
			clip.Runes(s.resume, 64), len(sp.history.buf), s.m.name))))
		return
	}
	for _, e := range entries {
		s.enqueue(frame{data: e.data})
	}
	sp.srv.metrics.resumed.Add(float64(len(entries)))
}

// detach removes s from the space if it is still there and tells the others.
func (sp *liveSpace) detach(s *session) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.detachLocked(s)
}

func (sp *liveSpace) detachLocked(s *session) {
	if sp.sessions[s.id] != s {
		return
	}
	delete(sp.sessions, s.id)
	sp.srv.trim.moved()
	if s.m.sess == s {
		s.m.sess = nil
		if !sp.link.connectedElsewhereLocked(s.m) {
			sp.presenceChangedLocked(s.m, false, sp.srv.now())
		}
	}
	sp.link.leaveLocked(s)
	sp.leaveRosterLocked(s)
	sp.streamsLeaveLocked(s)
	sp.floorLeaveLocked(s)
	sp.srv.metrics.connections.WithLabelValues(s.transport).Dec()
	sp.broadcastLocked(sp.presenceEnvelope(protocol.PresenceLeave, protocol.ParticipantInfo{ID: s.id}), nil)
}

// welcomeLocked makes s's welcome. Its participant list is assembled from
// each member's capabilities as already encoded (capView.array), so a join
// costs a copy of the roster, not its encoding; the compact audit layout
// records the welcome without that list (a join is recorded as a join, not as the
// roster it was shown), with the count in its metadata. mu must be held.
func (sp *liveSpace) welcomeLocked(s *session) delivery {
	remote := sp.link.participantsLocked()
	you := appendParticipant(make([]byte, 0, 64), s.id, s.m.view())
	size := len(you) + 64
	for _, o := range sp.roster {
		size += len(o.id) + len(o.m.view().array) + 24
	}
	list := make([]byte, 0, size)
	n := 0
	for _, o := range sp.roster {
		if o == s {
			continue
		}
		if n > 0 {
			list = append(list, ',')
		}
		list = appendParticipant(list, o.id, o.m.view())
		n++
	}
	for _, info := range remote {
		if n > 0 {
			list = append(list, ',')
		}
		list = sp.appendJSON(list, info)
		n++
	}
	streams := sp.appendJSON(nil, sp.activeStreamsLocked())
	welcome := func(participants []byte) []byte {
		p := make([]byte, 0, len(you)+len(participants)+len(streams)+48)
		p = append(append(p, `{"you":`...), you...)
		p = append(append(append(p, `,"participants":[`...), participants...), ']')
		return append(append(append(p, `,"active_streams":`...), streams...), '}')
	}
	d := sp.systemEnvelopeRaw(protocol.KindSystemWelcome, []string{s.id}, welcome(list))
	if n > 0 {
		d.abridged = d.withPayload(welcome(nil))
		d.abridgedMeta = fmt.Appendf(nil, `{"abridged":{"participants":%d}}`, n)
	}
	return d
}

// appendParticipant appends id and v's capabilities as a participant entry
// of a welcome or presence (protocol.ParticipantInfo's encoding).
func appendParticipant(dst []byte, id string, v *capView) []byte {
	dst = protocol.AppendString(append(dst, `{"id":`...), id)
	if v.list != nil { // omitzero, as ParticipantInfo encodes it
		dst = append(append(dst, `,"capabilities":`...), v.array...)
	}
	return append(dst, '}')
}

// appendJSON appends v encoded by protocol.Marshal. Only the gateway's own types
// reach it, which always encode.
func (sp *liveSpace) appendJSON(dst []byte, v any) []byte {
	b, err := protocol.Marshal(v)
	if err != nil {
		// The gateway's own types always encode; should one not (a bug,
		// never a participant's input), every space goes on.
		sp.srv.opts.Logger.Error("gateway: cannot encode its own value", "space", sp.id, "type", fmt.Sprintf("%T", v), "err", err)
		return append(dst, "{}"...)
	}
	return append(dst, b...)
}

// systemEnvelope encodes an envelope from the gateway, correlated to corr
// when given.
func (sp *liveSpace) systemEnvelope(kind string, to []string, payload any, corr ...string) delivery {
	return sp.systemEnvelopeRaw(kind, to, sp.appendJSON(nil, payload), corr...)
}

// presenceEnvelope announces the join or leave (event) of who, here or on
// another node.
func (sp *liveSpace) presenceEnvelope(event string, who protocol.ParticipantInfo) delivery {
	return sp.systemEnvelope(protocol.KindSystemPresence, nil, protocol.Presence{Event: event, Participant: who})
}

// systemEnvelopeRaw is systemEnvelope with the payload already encoded
// (compact JSON, an object).
func (sp *liveSpace) systemEnvelopeRaw(kind string, to []string, payload []byte, corr ...string) delivery {
	now := sp.srv.now()
	env := &protocol.Envelope{
		Protocol: protocol.Version, ID: protocol.NewID(), TS: protocol.FormatTime(now),
		From: protocol.GatewayID, To: to, Kind: kind, CorrelationID: corr, Payload: payload,
	}
	return delivery{data: env.AppendJSON(nil), id: env.ID, kind: kind, at: now, to: to, env: env}
}

// delivery describes one envelope for history, metrics and the audit log.
type delivery struct {
	data []byte
	id   string
	kind string
	at   time.Time
	// logged, when set, is what the audit log records instead of data
	// (data with a secret blanked out).
	logged []byte
	// abridged, when set, is what the compact audit layout records instead
	// of data: a welcome without its roster, which abridgedMeta describes
	// (audit.EnvelopeRecord.Abridged).
	abridged, abridgedMeta []byte
	// env is the envelope of a gateway's own delivery (systemEnvelopeRaw),
	// for withPayload; nil for a participant's.
	env *protocol.Envelope
	src *member  // the participant that sent it; nil for the gateway's own
	to  []string // the envelope's addressees: their copies are not held back (frame.addressed)
	// remote: another node accepted or made it (its envelope from the
	// Broker, or what this node derives from its presence, invitation or
	// stream change); that node put it in the cluster's history.
	remote bool
}

// remote marks d as another node's: it is not appended to the cluster's
// history again here.
func remote(d delivery) delivery {
	d.remote = true
	return d
}

// broadcastLocked queues data for every session but exclude. mu must be held.
func (sp *liveSpace) broadcastLocked(d delivery, exclude *session) {
	// The node's history keeps what it delivered, for resumes (and, on a
	// single node, for polls); a node of a cluster also appends what it
	// accepted to the cluster's history, which polls read there.
	sp.history.add(d.at, d.id, d.data, nil)
	rcpts := sp.recipients
	if exclude != nil {
		rcpts = make([]audit.Recipient, 0, len(sp.recipients))
	}
	f := frame{data: d.data, src: d.src, lazy: d.kind == protocol.KindSystemPresence && d.src == nil}
	var missed []int // recipients the envelope could not be queued for (rare)
	for i, s := range sp.roster {
		if s == exclude {
			continue
		}
		f.addressed = len(d.to) > 0 && (slices.Contains(d.to, s.id) || slices.Contains(d.to, s.m.name))
		if !s.enqueue(f) {
			missed = append(missed, i)
			continue
		}
		if exclude != nil {
			rcpts = append(rcpts, sp.recipients[i])
		}
	}
	if len(missed) > 0 && exclude == nil {
		// The audit log records deliveries that were queued, not those
		// shed or refused by a closing connection.
		rcpts = make([]audit.Recipient, 0, len(sp.recipients)-len(missed))
		for i, r := range sp.recipients {
			if !slices.Contains(missed, i) {
				rcpts = append(rcpts, r)
			}
		}
	}
	// A presence reaches everyone connected but its subject (excluded from
	// its own join): the audit log records how many, not who.
	everyone := d.kind == protocol.KindSystemPresence && len(missed) == 0
	sp.srv.delivered(sp, d, rcpts, everyone)
	sp.link.deliveredLocked(d)
}

// withPayload encodes d's envelope, one of the gateway's own, with another
// payload.
func (d delivery) withPayload(payload []byte) []byte {
	c := *d.env
	c.Payload = payload
	return c.AppendJSON(nil)
}

func (sp *liveSpace) unicastLocked(s *session, d delivery) {
	if d.kind != protocol.KindSystemWelcome {
		// Welcomes stay out of the history: they grow with the space (a
		// thousand joins would pin a thousand participant lists), and a
		// poller gets its current state from GET /participants.
		sp.history.add(d.at, d.id, d.data, s.m)
	}
	f := frame{data: d.data, src: d.src, addressed: true}
	if d.logged != nil && s.transport == transportVirtual {
		f.data = d.logged // a file gets what the audit log gets: no secrets
	}
	if s.enqueue(f) {
		sp.srv.delivered(sp, d, []audit.Recipient{{ID: s.id, Transport: s.transport}}, false)
	}
}

// unicast sends a private answer to s, if it is still connected.
func (sp *liveSpace) unicast(s *session, d delivery) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.sessions[s.id] == s {
		sp.unicastLocked(s, d)
	}
}

// resolve returns the member a participant id names: a logical name or the
// runtime id of a current connection.
func (sp *liveSpace) resolve(id string) *member {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.resolveLocked(id)
}

func (sp *liveSpace) resolveLocked(id string) *member {
	if m, ok := sp.members[id]; ok {
		return m
	}
	if s, ok := sp.sessions[id]; ok {
		return s.m
	}
	return sp.aliases[id]
}

// closeAll kills every session with code and reason.
func (sp *liveSpace) closeAll(code websocket.StatusCode, reason string) []*session {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	all := slices.Clone(sp.roster)
	for _, s := range all {
		s.kill(code, reason)
	}
	return all
}

// --- presence on other nodes of a cluster (clusterlink.Link follows it) ---

// connectedHereLocked is participant's connection to this node, or nil (an
// output_log participant's is each node's own, and no connection). mu must
// be held.
func (sp *liveSpace) connectedHereLocked(participant string) *session {
	if m := sp.members[participant]; m != nil && m.sess != nil && m.sess.transport != transportVirtual {
		return m.sess
	}
	return nil
}

// replacedLocked ends s, replaced by a connection of its participant made
// later on another node; mu must be held.
func (sp *liveSpace) replacedLocked(s *session) {
	s.kill(CloseReplaced, "replaced by a new connection of the same participant on another node")
	sp.detachLocked(s)
}

// remoteJoinedLocked records that participant is connected to another
// node, and with announce (not a refresh of its entry) tells this node's
// participants, who read it as info. mu must be held.
func (sp *liveSpace) remoteJoinedLocked(participant string, info protocol.ParticipantInfo, announce bool) {
	if m := sp.members[participant]; m != nil {
		sp.presenceChangedLocked(m, true, sp.srv.now())
	}
	if announce {
		sp.broadcastLocked(remote(sp.presenceEnvelope(protocol.PresenceJoin, info)), nil)
	}
}

// remoteLeftLocked records that participant's connection to another node
// (under runtimeID, announced as id) ended: with streams (the space shares
// streams with the cluster already), what that does to its streams is
// applied here as when a connection here ends, and this node's
// participants are told. mu must be held.
func (sp *liveSpace) remoteLeftLocked(participant, runtimeID, id string, streams bool) {
	if m := sp.members[participant]; m != nil && m.sess == nil {
		sp.presenceChangedLocked(m, false, sp.srv.now())
	}
	if streams {
		sp.remoteStreamsGoneLocked(participant, runtimeID)
	}
	sp.broadcastLocked(remote(sp.presenceEnvelope(protocol.PresenceLeave, protocol.ParticipantInfo{ID: id})), nil)
}

// sendAwayLocked closes every connection to the space (output_log
// participants, which have nowhere else to go, stay) with code and reason,
// for them to reconnect, likely to another node. mu must be held.
func (sp *liveSpace) sendAwayLocked(code websocket.StatusCode, reason string) {
	for _, s := range slices.Clone(sp.roster) {
		if s.transport == transportVirtual {
			continue
		}
		s.kill(code, reason)
		sp.detachLocked(s)
	}
}
