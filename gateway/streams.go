package gateway

// Streams (spec §3.10, with the reference's s2w ownership and t5d targeted
// delivery extensions).
//
// The gateway intercepts every stream/request, whatever its to, allocates
// the stream's id and answers with a stream/open addressed to the requester
// and seen by everyone; the request itself is then relayed. Data frames
// "#<stream_id>#<data>" travel outside envelopes: only the stream's
// authorized writers may send them, and they go, as binary WebSocket
// messages, to every connection of the space (the writer included), or only
// to the stream's target when it has one.
//
// Where the reference is insecure we are not:
//
//   - only the owner closes a stream or changes its writers or owner, and
//     refusals are system/error answers on both transports (the reference
//     relays a non-owner's request silently over WebSocket);
//   - the owner is whoever sent the request: participantId, authorizedWriters
//     or owner members of the payload change nothing;
//   - a stream ends when its owner's connection does (the reference keeps it
//     forever, with an owner who is gone), announced by a stream/close from
//     the gateway with reason "owner_left";
//   - streams, and frames per stream, are bounded.
//
// All stream state lives in the space's streamTable, guarded by
// liveSpace.mu, like the rest of the space. Frames are queued under that
// lock too, so they keep their order with the envelopes around them
// (a stream/close relayed after a frame reaches everyone after the frame).

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/protocol"
)

// Error codes of stream requests, closes and ownership changes, besides
// protocol.ErrorTargetNotFound, protocol.ErrorStreamNotFound,
// protocol.ErrorParticipantNotFound, protocol.ErrorInvalidOperation and
// ErrorUnauthorizedStream.
const (
	// ErrorTooManyStreams refuses a stream/request (or an ownership
	// transfer) that would take the space or the owner past its number of
	// open streams. HTTP 429.
	ErrorTooManyStreams = "too_many_streams"
	// ErrorNotStreamOwner refuses a stream/close, stream/grant-write,
	// stream/revoke-write or stream/transfer-ownership from a participant
	// that does not own the stream. HTTP 403. (The reference answers
	// "unauthorized" over HTTP, which here means a bad token.)
	ErrorNotStreamOwner = "not_stream_owner"
)

// Stream limits.
const (
	// maxStreamsPerSpace bounds the open streams of one space.
	maxStreamsPerSpace = 1024
	// maxStreamsPerOwner bounds the open streams one participant owns.
	maxStreamsPerOwner = 64
)

// StreamCloseOwnerLeft is the reason of the stream/close the gateway sends
// when a stream's owner leaves the space.
const StreamCloseOwnerLeft = "owner_left"

// streamIDPrefix starts every stream id: stream-1, stream-2, ... per space,
// as the reference numbers them. A number is never reused in a gateway's
// lifetime, so a frame for a closed stream can never reach a newer one.
const streamIDPrefix = "stream-"

// internalStreamKeys are request payload members that are not shown to late
// joiners: the names the reference uses for its own bookkeeping
// (requestId, participantId, authorizedWriters, created) and the members the
// gateway writes itself. A client could otherwise make active_streams claim
// another owner or other writers.
var internalStreamKeys = []string{
	"requestId", "participantId", "authorizedWriters", "created",
	"stream_id", "owner", "authorized_writers",
}

// streamTable is a space's open streams. Guarded by liveSpace.mu.
type streamTable struct {
	last    uint64             // number of the last stream opened
	byID    map[string]*stream // open streams by id
	byOwner map[*member]int    // open streams per owning participant
}

// stream is one open stream.
type stream struct {
	id        string
	seq       uint64                 // creation order, for active_streams
	owner     string                 // the owner's participant id as others see it
	ownerM    *member                // the owning participant
	writers   []string               // authorized writers: runtime ids or logical names
	target    []string               // when not empty, only these receive the frames
	request   protocol.StreamRequest // what was asked, internal keys removed
	requestID string                 // the stream/request envelope's id
	openID    string                 // the stream/open envelope's id
	created   time.Time
}

// add records st as open. mu must be held.
func (t *streamTable) add(st *stream) {
	if t.byID == nil {
		t.byID = make(map[string]*stream)
		t.byOwner = make(map[*member]int)
	}
	t.byID[st.id] = st
	t.byOwner[st.ownerM]++
}

// remove forgets st. mu must be held.
func (t *streamTable) remove(st *stream) {
	delete(t.byID, st.id)
	t.setOwner(st, nil)
}

// setOwner moves st's count from its owner to m (nil: to nobody). It does
// not change st itself. mu must be held.
func (t *streamTable) setOwner(st *stream, m *member) {
	if n := t.byOwner[st.ownerM] - 1; n > 0 {
		t.byOwner[st.ownerM] = n
	} else {
		delete(t.byOwner, st.ownerM)
	}
	if m != nil {
		t.byOwner[m]++
	}
}

// sorted returns the open streams in the order they were opened. mu must be
// held.
func (t *streamTable) sorted() []*stream {
	list := make([]*stream, 0, len(t.byID))
	for _, st := range t.byID {
		list = append(list, st)
	}
	slices.SortFunc(list, func(a, b *stream) int { return cmp.Compare(a.seq, b.seq) })
	return list
}

// streamAnswer is the HTTP API's answer to an accepted stream/request
// (status stream_opened) or ownership change (granted, revoked,
// transferred), in the reference's member order.
type streamAnswer struct {
	ID                string   `json:"id"` // the gateway's stream/open or announcement
	Status            string   `json:"status"`
	StreamID          string   `json:"stream_id"`
	ParticipantID     string   `json:"participant_id,omitempty"`
	PreviousOwner     string   `json:"previous_owner,omitempty"`
	NewOwner          string   `json:"new_owner,omitempty"`
	AuthorizedWriters []string `json:"authorized_writers,omitempty"`
	Timestamp         string   `json:"timestamp"`
}

// streamRefusal is refuse with the HTTP status each stream error code
// should have (statusFor knows only the pipeline's codes).
func streamRefusal(code, message string) *refusal {
	r := refuse(code, message)
	switch code {
	case protocol.ErrorStreamNotFound, protocol.ErrorParticipantNotFound:
		r.status = http.StatusNotFound
	case ErrorNotStreamOwner:
		r.status = http.StatusForbidden
	case ErrorTooManyStreams:
		r.status = http.StatusTooManyRequests
	}
	return r
}

// withStreamID makes a refusal's payload carry the stream id, as the
// reference's stream errors do.
func withStreamID(r *refusal, id string) *refusal {
	r.fields = func(dst []byte) []byte {
		return protocol.AppendString(append(dst, `,"stream_id":`...), id)
	}
	return r
}

// connectedMemberLocked returns the member a participant id names if that
// participant is connected: the runtime id of a connection, or the logical
// name of a connected participant. mu must be held.
func (sp *liveSpace) connectedMemberLocked(id string) *member {
	if s, ok := sp.sessions[id]; ok {
		return s.m
	}
	if m, ok := sp.members[id]; ok && m.sess != nil {
		return m
	}
	return nil
}

// streamMemberLocked is connectedMemberLocked, and in a cluster also a
// participant connected on another node. mu must be held.
func (sp *liveSpace) streamMemberLocked(id string) *member {
	if m := sp.connectedMemberLocked(id); m != nil {
		return m
	}
	return sp.link.remoteMemberLocked(id)
}

// streamRecipientsLocked returns the runtime ids of the connected participants.
// mu must be held.
func (sp *liveSpace) streamRecipientsLocked() []string {
	ids := make([]string, len(sp.roster))
	for i, s := range sp.roster {
		ids[i] = s.id
	}
	return ids
}

// isMemberID reports whether id names participant m: its logical name or the
// runtime id of its connection. mu must be held.
func isMemberID(id string, m *member) bool {
	return id == m.name || (m.sess != nil && id == m.sess.id)
}

// streamRequestCheckLocked refuses a stream/request from o whose target
// names someone not connected, or that would take the space or o past its
// number of open streams. mu must be held.
func (sp *liveSpace) streamRequestCheckLocked(o origin, target []string) *refusal {
	var missing []string
	for _, id := range target {
		if sp.streamMemberLocked(id) == nil && !slices.Contains(missing, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		r := refuse(protocol.ErrorTargetNotFound, "One or more target participants do not exist in space")
		r.fields = func(dst []byte) []byte {
			dst = append(dst, `,"targets":[`...)
			for i, id := range missing {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = protocol.AppendString(dst, id)
			}
			return append(dst, ']')
		}
		return r
	}
	t := &sp.streams
	if len(t.byID) >= maxStreamsPerSpace {
		return streamRefusal(ErrorTooManyStreams,
			fmt.Sprintf("space %s has %d open streams, the most it may have", sp.id, maxStreamsPerSpace))
	}
	if t.byOwner[o.m] >= maxStreamsPerOwner {
		return streamRefusal(ErrorTooManyStreams,
			fmt.Sprintf("%s owns %d open streams, the most one participant may own", o.id, maxStreamsPerOwner))
	}
	return nil
}

// streamRequest handles stream/request: it opens a stream owned by the
// sender, broadcasts the stream/open addressed to it, and lets the request
// be relayed. Over HTTP the answer is the reference's
// {"id":<open id>,"status":"stream_opened","stream_id","timestamp"}.
func (sp *liveSpace) streamRequest(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	var req protocol.StreamRequest
	if err := env.DecodePayload(&req); err != nil {
		return outcome{}, refuse(ErrorInvalidEnvelope, "stream/request payload: "+err.Error())
	}
	for _, k := range internalStreamKeys {
		delete(req.Extra, k)
	}
	if len(req.Extra) == 0 {
		req.Extra = nil
	}
	// In a cluster the number comes from the space's counter, taken outside
	// the lock once check says the request would be accepted: a refused
	// request takes none. On one node streamNumber answers 0 at once, and
	// the node's own counter numbers the stream below.
	number, rf := sp.link.streamNumber(func() *refusal {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		return sp.streamRequestCheckLocked(o, req.Target)
	})
	if rf != nil {
		return outcome{}, rf
	}

	sp.mu.Lock()
	defer sp.mu.Unlock()
	if rf := sp.streamRequestCheckLocked(o, req.Target); rf != nil {
		return outcome{}, rf
	}
	t := &sp.streams
	seq := t.last + 1
	if number != 0 {
		seq = number
	}
	st := &stream{
		id:        streamIDPrefix + strconv.FormatUint(seq, 10),
		seq:       seq,
		owner:     o.id,
		ownerM:    o.m,
		writers:   []string{o.id},
		target:    req.Target,
		request:   req,
		requestID: env.ID,
		created:   now,
	}
	open := protocol.StreamOpen{
		StreamID:          st.id,
		Encoding:          protocol.StreamEncodingText,
		Owner:             st.owner,
		AuthorizedWriters: slices.Clone(st.writers),
		Target:            st.target,
	}
	d := sp.systemEnvelope(protocol.KindStreamOpen, []string{o.id}, open, env.ID)
	st.openID = d.id
	t.last = max(t.last, seq)
	t.add(st)
	sp.broadcastLocked(d, nil)
	sp.link.streamChangedLocked(cluster.StreamOpOpen, st, nil, env.ID, d.data)

	return outcome{relay: true, status: http.StatusOK, body: streamAnswer{
		ID: d.id, Status: "stream_opened", StreamID: st.id, Timestamp: protocol.FormatTime(d.at),
	}}, nil
}

// streamClose handles stream/close. The stream is named by payload.stream_id
// or, as the reference's terminal client does, only by a correlation_id
// naming the stream/request or the stream/open of a stream. Only its owner
// may close it; the close is then relayed. A close by correlation_id that
// names no gateway stream (participants may negotiate streams among
// themselves with their own stream/open) is relayed as it is.
func (sp *liveSpace) streamClose(o origin, env *protocol.Envelope, _ time.Time) (outcome, *refusal) {
	var p protocol.StreamClose
	if err := env.DecodePayload(&p); err != nil {
		return outcome{}, refuse(ErrorInvalidEnvelope, "stream/close payload: "+err.Error())
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	t := &sp.streams
	var st *stream
	if p.StreamID != "" {
		st = t.byID[p.StreamID]
		if st == nil {
			return outcome{}, withStreamID(streamRefusal(protocol.ErrorStreamNotFound,
				"no open stream "+p.StreamID), p.StreamID)
		}
	} else {
		for _, c := range env.CorrelationID {
			for _, s := range t.byID {
				if c == s.requestID || c == s.openID {
					// Prefer a stream the sender owns, should several match.
					if st == nil || (st.ownerM != o.m && s.ownerM == o.m) {
						st = s
					}
				}
			}
		}
		if st == nil {
			return relayed, nil
		}
	}
	if st.ownerM != o.m {
		return outcome{}, withStreamID(streamRefusal(ErrorNotStreamOwner,
			"only the owner of stream "+st.id+" ("+st.owner+") may close it"), st.id)
	}
	t.remove(st)
	sp.link.streamChangedLocked(cluster.StreamOpClose, st, nil, env.ID, nil)
	return relayed, nil
}

// streamOwnership handles stream/grant-write, stream/revoke-write and
// stream/transfer-ownership. Only the stream's owner may send them; the
// gateway then broadcasts stream/write-granted, stream/write-revoked or
// stream/ownership-transferred, addressed to every participant, instead of
// relaying the request.
func (sp *liveSpace) streamOwnership(o origin, env *protocol.Envelope, _ time.Time) (outcome, *refusal) {
	var (
		streamID, who, reason string
		verb                  string
	)
	switch env.Kind {
	case protocol.KindStreamGrantWrite:
		var p protocol.StreamGrantWrite
		if err := env.DecodePayload(&p); err != nil {
			return outcome{}, refuse(ErrorInvalidEnvelope, env.Kind+" payload: "+err.Error())
		}
		streamID, who, reason, verb = p.StreamID, p.ParticipantID, p.Reason, "grant write access to"
	case protocol.KindStreamRevokeWrite:
		var p protocol.StreamRevokeWrite
		if err := env.DecodePayload(&p); err != nil {
			return outcome{}, refuse(ErrorInvalidEnvelope, env.Kind+" payload: "+err.Error())
		}
		streamID, who, reason, verb = p.StreamID, p.ParticipantID, p.Reason, "revoke write access to"
	case protocol.KindStreamTransferOwnership:
		var p protocol.StreamTransferOwnership
		if err := env.DecodePayload(&p); err != nil {
			return outcome{}, refuse(ErrorInvalidEnvelope, env.Kind+" payload: "+err.Error())
		}
		streamID, who, reason, verb = p.StreamID, p.NewOwner, p.Reason, "transfer ownership of"
	default:
		return relayed, nil
	}
	if streamID == "" || who == "" {
		return outcome{}, refuse(ErrorInvalidEnvelope, env.Kind+" requires stream_id and a participant")
	}

	sp.mu.Lock()
	defer sp.mu.Unlock()
	t := &sp.streams
	st := t.byID[streamID]
	if st == nil {
		return outcome{}, withStreamID(streamRefusal(protocol.ErrorStreamNotFound, "no open stream "+streamID), streamID)
	}
	if st.ownerM != o.m {
		return outcome{}, withStreamID(streamRefusal(ErrorNotStreamOwner,
			"only the owner of stream "+st.id+" ("+st.owner+") may "+verb+" it"), st.id)
	}
	notFound := func() (outcome, *refusal) {
		return outcome{}, withStreamID(streamRefusal(protocol.ErrorParticipantNotFound,
			"participant "+who+" is not in the space"), st.id)
	}

	var (
		d   delivery
		ans streamAnswer
	)
	to, corr := sp.streamRecipientsLocked(), []string{env.ID}
	before := slices.Clone(st.writers) // for the space's link
	switch env.Kind {
	case protocol.KindStreamGrantWrite:
		m := sp.streamMemberLocked(who)
		if m == nil {
			return notFound()
		}
		if !slices.ContainsFunc(st.writers, func(w string) bool { return isMemberID(w, m) }) {
			st.writers = append(st.writers, who)
		}
		d = sp.systemEnvelope(protocol.KindStreamWriteGranted, to, protocol.StreamWriteGranted{
			StreamID: st.id, ParticipantID: who, AuthorizedWriters: slices.Clone(st.writers), Reason: reason,
		}, corr...)
		ans = streamAnswer{Status: "granted", ParticipantID: who}
	case protocol.KindStreamRevokeWrite:
		m := sp.streamMemberLocked(who)
		if m == nil {
			m = sp.members[who]
		}
		listed := slices.Contains(st.writers, who)
		if m == nil && !listed {
			return notFound()
		}
		if m == st.ownerM || who == st.owner {
			return outcome{}, withStreamID(streamRefusal(protocol.ErrorInvalidOperation,
				"Owner cannot revoke own write access"), st.id)
		}
		st.writers = slices.DeleteFunc(st.writers, func(w string) bool {
			return w == who || (m != nil && isMemberID(w, m))
		})
		d = sp.systemEnvelope(protocol.KindStreamWriteRevoked, to, protocol.StreamWriteRevoked{
			StreamID: st.id, ParticipantID: who, AuthorizedWriters: slices.Clone(st.writers), Reason: reason,
		}, corr...)
		ans = streamAnswer{Status: "revoked", ParticipantID: who}
	case protocol.KindStreamTransferOwnership:
		m := sp.streamMemberLocked(who)
		if m == nil {
			return notFound()
		}
		if m == st.ownerM {
			return outcome{}, withStreamID(streamRefusal(protocol.ErrorInvalidOperation,
				who+" already owns stream "+st.id), st.id)
		}
		if t.byOwner[m] >= maxStreamsPerOwner {
			return outcome{}, withStreamID(streamRefusal(ErrorTooManyStreams,
				fmt.Sprintf("%s owns %d open streams, the most one participant may own", who, maxStreamsPerOwner)), st.id)
		}
		prev, prevM := st.owner, st.ownerM
		writers := slices.DeleteFunc(slices.Clone(st.writers), func(w string) bool {
			return w == prev || isMemberID(w, prevM)
		})
		if !slices.ContainsFunc(writers, func(w string) bool { return isMemberID(w, m) }) {
			writers = append(writers, who)
		}
		d = sp.systemEnvelope(protocol.KindStreamOwnershipTransferred, to, protocol.StreamOwnershipTransferred{
			StreamID: st.id, PreviousOwner: prev, NewOwner: who, AuthorizedWriters: slices.Clone(writers), Reason: reason,
		}, corr...)
		t.setOwner(st, m)
		st.owner, st.ownerM, st.writers = who, m, writers
		ans = streamAnswer{Status: "transferred", PreviousOwner: prev, NewOwner: who}
	}
	sp.broadcastLocked(d, nil)
	op := cluster.StreamOpWriters
	if env.Kind == protocol.KindStreamTransferOwnership {
		op = cluster.StreamOpTransfer
	}
	sp.link.streamChangedLocked(op, st, before, env.ID, d.data)

	ans.ID, ans.StreamID, ans.Timestamp = d.id, st.id, protocol.FormatTime(d.at)
	ans.AuthorizedWriters = slices.Clone(st.writers)
	return outcome{relay: false, status: http.StatusOK, body: ans}, nil
}

// activeStreamsLocked lists the open streams for a welcome, oldest first:
// the stream's state, then every member of the request that opened it
// (custom ones included, the internal keys above excepted). mu must be held.
func (sp *liveSpace) activeStreamsLocked() []protocol.StreamInfo {
	list := make([]protocol.StreamInfo, 0, len(sp.streams.byID))
	for _, st := range sp.streams.sorted() {
		r := st.request
		list = append(list, protocol.StreamInfo{
			StreamID:          st.id,
			Owner:             st.owner,
			AuthorizedWriters: slices.Clone(st.writers),
			Created:           protocol.FormatTime(st.created),
			Direction:         r.Direction,
			ExpectedSizeBytes: r.ExpectedSizeBytes,
			Description:       r.Description,
			ContentType:       r.ContentType,
			Format:            r.Format,
			Metadata:          r.Metadata,
			Target:            r.Target,
			Extra:             r.Extra, // never changed once stored
		})
	}
	return list
}

// streamsLeaveLocked updates the streams when s leaves: the streams its
// participant owns close, announced by a stream/close from the gateway
// (reason owner_left, correlated with the stream/open) to everyone left,
// and it stops being a writer of the others. mu must be held; s is already
// out of the roster. A stream opened over HTTP by a participant without a
// connection lasts until its owner closes it, or connects and leaves.
func (sp *liveSpace) streamsLeaveLocked(s *session) {
	t := &sp.streams
	if len(t.byID) == 0 {
		return
	}
	for _, st := range t.sorted() {
		if st.ownerM == s.m {
			t.remove(st)
			d := sp.systemEnvelope(protocol.KindStreamClose, nil, protocol.StreamClose{
				StreamID: st.id, Reason: StreamCloseOwnerLeft,
			}, st.openID)
			sp.broadcastLocked(d, nil)
			sp.link.streamChangedLocked(cluster.StreamOpClose, st, nil, "", d.data)
			continue
		}
		leaving := func(w string) bool { return w == s.id || w == s.m.name }
		if slices.ContainsFunc(st.writers, leaving) {
			before := slices.Clone(st.writers)
			st.writers = slices.DeleteFunc(st.writers, leaving)
			sp.link.streamChangedLocked(cluster.StreamOpWriters, st, before, "", nil)
		}
	}
}

// streamFrame handles a stream data frame "#<stream_id>#<data>" read from a
// WebSocket. data is the reader's buffer, reused for the next message: what
// is queued is a copy, shared by every recipient.
//
// A frame for a stream that is not open, or from a participant that is not
// one of its writers, is refused with unauthorized_stream_write; such
// refusals count against the sender's envelope rate, so that a flood of
// them is answered at most once a second. A frame over the stream's rate is
// refused with rate_limited (also answered at most once a second). An
// accepted frame goes to every WebSocket connection of the space, the
// writer's included, or, if the stream has a target, only to connections
// whose runtime id or logical name is in it. output_log participants get no
// frames: their files hold envelopes, one JSON object per line.
func (sp *liveSpace) streamFrame(o origin, data []byte) {
	id, _, err := protocol.ParseFrame(data)
	if err != nil {
		sp.refuseFrame(o, string(id), "malformed stream frame: "+err.Error())
		return
	}
	if rf := sp.checkControl(o, kindFrame, sp.srv.now()); rf != nil {
		sp.answer(o, rf) // a paused or shut-down participant writes no frames either
		return
	}
	sp.mu.Lock()
	if sp.sessions[o.id] != o.s {
		// A connection replaced or removed while its last messages were
		// being read: it no longer speaks for anyone.
		sp.mu.Unlock()
		return
	}
	st := sp.streams.byID[string(id)]
	if st == nil || !slices.ContainsFunc(st.writers, func(w string) bool { return w == o.id || w == o.m.name }) {
		sp.mu.Unlock()
		sp.refuseFrame(o, string(id), "You are not authorized to write to stream "+string(id))
		return
	}
	// Frames count against their sender, all its streams together, as its
	// envelopes do: many streams buy no more than one.
	if lim := o.m.limiter; lim != nil && !lim.allow(len(data)) {
		sp.mu.Unlock()
		sp.answer(o, withStreamID(overLimit(sp.srv.opts), st.id))
		return
	}
	f := frame{data: append([]byte(nil), data...), binary: true, src: o.m}
	sp.deliverFrameLocked(st, f)
	sp.link.streamFrameLocked(st, o.m.name, f.data)
	sp.mu.Unlock()
}

// deliverFrameLocked queues f, a frame of st accepted here or on another
// node, for the local connections it goes to. mu must be held.
func (sp *liveSpace) deliverFrameLocked(st *stream, f frame) {
	for _, s := range sp.roster {
		if s.transport == transportVirtual {
			continue
		}
		if len(st.target) > 0 && !slices.ContainsFunc(st.target, func(t string) bool { return t == s.id || t == s.m.name }) {
			continue
		}
		s.enqueue(f)
	}
}

// refuseFrame answers a frame the sender may not write with
// unauthorized_stream_write, or with rate_limited once the sender's
// budget is spent.
func (sp *liveSpace) refuseFrame(o origin, id, msg string) {
	if lim := o.m.limiter; lim != nil && !lim.allow(len(id)) {
		sp.answer(o, overLimit(sp.srv.opts))
		return
	}
	sp.answer(o, withStreamID(refuse(ErrorUnauthorizedStream, msg), id))
}

// --- streams across the nodes of a cluster (clusterlink.Link shares and applies) ---

// streamRecord makes the record of a change of st. For an open it holds
// the whole stream.
func streamRecord(op string, st *stream) cluster.Stream {
	rec := cluster.Stream{ID: st.id}
	switch op {
	case cluster.StreamOpOpen:
		req, _ := json.Marshal(st.request) // a decoded request always encodes
		rec = cluster.Stream{
			ID: st.id, Seq: st.seq, Writers: st.writers, Target: st.target, Request: req,
			RequestID: st.requestID, OpenID: st.openID, Created: st.created,
		}
		fallthrough
	case cluster.StreamOpTransfer:
		rec.Owner = st.owner
		if st.ownerM != nil {
			rec.OwnerOf = st.ownerM.name
		}
	}
	return rec
}

// applyStreamChangeLocked applies a change of a stream made on another
// node, as that node applied it, and delivers its announcement when
// announce is set (not while catching up at start). note is false for an
// open of a stream known already (a repeat, not this node's to announce
// again); open reports that the stream is open here after the change. mu
// must be held.
func (sp *liveSpace) applyStreamChangeLocked(c cluster.StreamChange, announce bool) (note, open bool) {
	t := &sp.streams
	rec := c.Stream
	st := t.byID[rec.ID]
	if st == nil && c.Op != cluster.StreamOpOpen {
		// Closed here already (its owner's presence left first), or
		// never known: nothing to change, nothing to announce.
		return true, false
	}
	switch c.Op {
	case cluster.StreamOpOpen:
		if st != nil {
			return false, true // a repeated open: not ours to announce again
		}
		var req protocol.StreamRequest
		if len(rec.Request) > 0 {
			if err := json.Unmarshal(rec.Request, &req); err != nil {
				sp.srv.opts.Logger.Warn("cluster: bad stream request", "space", sp.id, "stream", rec.ID, "err", err)
			}
		}
		st = &stream{
			id: rec.ID, seq: rec.Seq, owner: rec.Owner, ownerM: sp.members[rec.OwnerOf],
			writers: slices.Clone(rec.Writers), target: slices.Clone(rec.Target), request: req,
			requestID: rec.RequestID, openID: rec.OpenID, created: rec.Created,
		}
		t.last = max(t.last, st.seq)
		t.add(st)
	case cluster.StreamOpWriters, cluster.StreamOpTransfer:
		if c.Op == cluster.StreamOpTransfer {
			t.setOwner(st, sp.members[rec.OwnerOf])
			st.owner, st.ownerM = rec.Owner, sp.members[rec.OwnerOf]
		}
		st.writers = slices.DeleteFunc(st.writers, func(w string) bool { return slices.Contains(c.Remove, w) })
		for _, w := range c.Add {
			if !slices.Contains(st.writers, w) {
				st.writers = append(st.writers, w)
			}
		}
	case cluster.StreamOpClose:
		t.remove(st)
	}
	open = c.Op != cluster.StreamOpClose
	if announce && len(c.Announce) > 0 {
		var head struct {
			ID   string `json:"id"`
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(c.Announce, &head); err != nil || head.Kind == "" {
			sp.srv.opts.Logger.Warn("cluster: bad stream announcement", "space", sp.id, "stream", rec.ID, "err", err)
			return true, open
		}
		sp.broadcastLocked(delivery{data: c.Announce, id: head.ID, kind: head.Kind, at: sp.srv.now(), remote: true}, nil)
	}
	return true, open
}

// remoteStreamsGoneLocked applies, here, what the end of participant's
// connection (under runtimeID) on another node does to streams
// (streamsLeaveLocked): the
// streams it owns close, announced as owner_left, and it is no writer of
// the others. Its node shares the same changes through the log, unless it
// died; whichever comes first applies, and the later one finds nothing to
// change and announces nothing. mu must be held.
func (sp *liveSpace) remoteStreamsGoneLocked(participant, runtimeID string) {
	t := &sp.streams
	m := sp.members[participant]
	if len(t.byID) == 0 || m == nil || m.sess != nil {
		return // a connection here is its own (detachLocked)
	}
	for _, st := range t.sorted() {
		if st.ownerM == m {
			t.remove(st)
			d := sp.systemEnvelope(protocol.KindStreamClose, nil, protocol.StreamClose{
				StreamID: st.id, Reason: StreamCloseOwnerLeft,
			}, st.openID)
			sp.broadcastLocked(remote(d), nil)
			continue
		}
		st.writers = slices.DeleteFunc(st.writers, func(w string) bool {
			return w == m.name || (runtimeID != "" && w == runtimeID)
		})
	}
}
