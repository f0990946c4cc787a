package participant

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/protocol"
)

// Streams (spec §3.10): requesting one, the bookkeeping of the space's open
// streams, and data frames through the client.
//
// The book follows what the participant sees: the welcome's active_streams
// (a full list; the welcome updates after a grant, which carry none, leave
// the book as it is), every stream/open (from the gateway, or a
// participant announcing a stream of its own), the stream/request relayed
// after it (whose members fill in the stream's description), ownership
// changes, and stream/close (by stream_id, or by a correlation_id naming
// the open or the request). Our gateway relays a close only from the
// stream's owner, so the book believes every close it sees.

// maxStreamRequests bounds the stream/request payloads kept until their
// stream/open arrives.
const maxStreamRequests = 256

// streamBook tracks the space's streams and this participant's requests.
// mu guards it.
type streamBook struct {
	mu     sync.Mutex
	seq    int64
	active map[string]*streamEntry // by stream id
	alias  map[string]string       // open and request envelope ids → stream id
	// requests are stream/request payloads whose open has not been seen,
	// by request id; requestOrder is oldest first.
	requests     map[string]protocol.StreamRequest
	requestOrder []string
	waiting      map[string]chan streamAnswer // own request id → RequestStream
}

// streamEntry is one open stream.
type streamEntry struct {
	info      protocol.StreamInfo
	seq       int64 // order of opening, for ActiveStreams
	openID    string
	requestID string
}

// streamAnswer is the gateway's answer to a stream/request.
type streamAnswer struct {
	streamID string
	err      error
}

func (p *Participant) wireStreams() {
	p.c.OnWelcome(p.onStreamWelcome)
	p.c.OnKind(protocol.KindStreamOpen, p.onStreamOpen)
	p.c.OnKind(protocol.KindStreamRequest, p.onStreamRequest)
	p.c.OnKind(protocol.KindStreamClose, p.onStreamClose)
	p.c.OnKind(protocol.KindStreamWriteGranted, p.onStreamWriters)
	p.c.OnKind(protocol.KindStreamWriteRevoked, p.onStreamWriters)
	p.c.OnKind(protocol.KindStreamOwnershipTransferred, p.onStreamOwner)
	p.c.OnKind(protocol.KindSystemError, p.onStreamError)
}

// onStreamWelcome replaces the book with the welcome's active_streams.
func (p *Participant) onStreamWelcome(w *protocol.Welcome) {
	if w.ActiveStreams == nil {
		return
	}
	b := &p.streams
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.active
	b.active = make(map[string]*streamEntry, len(w.ActiveStreams))
	b.alias = make(map[string]string)
	for _, info := range w.ActiveStreams {
		if info.StreamID == "" {
			continue
		}
		e := &streamEntry{info: info}
		if prev, ok := old[info.StreamID]; ok {
			e.seq, e.openID, e.requestID = prev.seq, prev.openID, prev.requestID
		} else {
			b.seq++
			e.seq = b.seq
		}
		b.active[info.StreamID] = e
		b.aliasLocked(e)
	}
}

// aliasLocked records the envelope ids that name entry e.
func (b *streamBook) aliasLocked(e *streamEntry) {
	if b.alias == nil {
		b.alias = make(map[string]string)
	}
	for _, id := range []string{e.openID, e.requestID} {
		if id != "" {
			b.alias[id] = e.info.StreamID
		}
	}
}

// onStreamOpen records a stream and answers RequestStream.
func (p *Participant) onStreamOpen(env *protocol.Envelope) {
	var open protocol.StreamOpen
	if err := env.DecodePayload(&open); err != nil || protocol.ValidateStreamID(open.StreamID) != nil {
		p.log.Debug("stream/open with a malformed payload", "id", env.ID, "err", err)
		return
	}
	fromGateway := client.FromGateway(env)
	owner, writers := open.Owner, open.AuthorizedWriters
	switch {
	case !fromGateway:
		// A participant announces a stream of its own: what it says of
		// owners and writers is its claim, not the gateway's record.
		owner, writers = env.From, nil
	case owner == "" && len(env.To) == 1:
		owner = env.To[0]
	case owner == "":
		owner = env.From
	}
	if len(writers) == 0 {
		writers = []string{owner}
	}
	var requestID string
	if len(env.CorrelationID) > 0 {
		requestID = env.CorrelationID[0]
	}
	b := &p.streams
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.active == nil {
		b.active = make(map[string]*streamEntry)
	}
	e, ok := b.active[open.StreamID]
	if !ok {
		b.seq++
		e = &streamEntry{seq: b.seq}
		b.active[open.StreamID] = e
	}
	e.openID, e.requestID = env.ID, requestID
	e.info.StreamID, e.info.Owner = open.StreamID, owner
	e.info.AuthorizedWriters = slices.Clone(writers)
	e.info.Target = slices.Clone(open.Target)
	if e.info.Created == "" {
		e.info.Created = env.TS
	}
	if req, ok := b.requests[requestID]; ok && requestID != "" {
		delete(b.requests, requestID)
		fillFromRequest(&e.info, req)
	}
	b.aliasLocked(e)
	if ch, ok := b.waiting[requestID]; ok && fromGateway && requestID != "" {
		delete(b.waiting, requestID)
		ch <- streamAnswer{streamID: open.StreamID}
	}
}

// fillFromRequest copies the members of the request that opened a stream
// into its info, as the gateway lists them to late joiners.
func fillFromRequest(info *protocol.StreamInfo, req protocol.StreamRequest) {
	info.Direction = req.Direction
	info.ExpectedSizeBytes = req.ExpectedSizeBytes
	info.Description = req.Description
	info.ContentType = req.ContentType
	info.Format = req.Format
	info.Metadata = slices.Clone(req.Metadata)
	if len(info.Target) == 0 {
		info.Target = slices.Clone(req.Target)
	}
	if len(req.Extra) > 0 {
		info.Extra = make(map[string]json.RawMessage, len(req.Extra))
		for k, v := range req.Extra {
			info.Extra[k] = slices.Clone(v)
		}
	}
}

// onStreamRequest keeps a request's members for its stream's info. Our
// gateway relays the request after its stream/open; other gateways may not.
func (p *Participant) onStreamRequest(env *protocol.Envelope) {
	if env.ID == "" {
		return
	}
	var req protocol.StreamRequest
	if err := env.DecodePayload(&req); err != nil {
		return
	}
	b := &p.streams
	b.mu.Lock()
	defer b.mu.Unlock()
	if sid, ok := b.alias[env.ID]; ok {
		if e, ok := b.active[sid]; ok && e.requestID == env.ID {
			fillFromRequest(&e.info, req)
		}
		return
	}
	if b.requests == nil {
		b.requests = make(map[string]protocol.StreamRequest)
	}
	if _, ok := b.requests[env.ID]; ok {
		return
	}
	for len(b.requestOrder) >= maxStreamRequests {
		delete(b.requests, b.requestOrder[0])
		b.requestOrder = b.requestOrder[1:]
	}
	b.requests[env.ID] = req
	b.requestOrder = append(b.requestOrder, env.ID)
}

// onStreamClose drops a closed stream.
func (p *Participant) onStreamClose(env *protocol.Envelope) {
	var c protocol.StreamClose
	_ = env.DecodePayload(&c)
	b := &p.streams
	b.mu.Lock()
	defer b.mu.Unlock()
	sid := c.StreamID
	if sid == "" {
		for _, id := range env.CorrelationID {
			if s, ok := b.alias[id]; ok {
				sid = s
				break
			}
		}
	}
	e, ok := b.active[sid]
	if !ok {
		return
	}
	delete(b.active, sid)
	for _, id := range []string{e.openID, e.requestID} {
		delete(b.alias, id)
	}
}

// onStreamWriters follows stream/write-granted and stream/write-revoked.
func (p *Participant) onStreamWriters(env *protocol.Envelope) {
	if !client.FromGateway(env) {
		return // the gateway's record; a participant's copy proves nothing
	}
	var w protocol.StreamWriteGranted // the same members as StreamWriteRevoked
	if err := env.DecodePayload(&w); err != nil || w.AuthorizedWriters == nil {
		return
	}
	b := &p.streams
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.active[w.StreamID]; ok {
		e.info.AuthorizedWriters = slices.Clone(w.AuthorizedWriters)
	}
}

// onStreamOwner follows stream/ownership-transferred.
func (p *Participant) onStreamOwner(env *protocol.Envelope) {
	if !client.FromGateway(env) {
		return
	}
	var t protocol.StreamOwnershipTransferred
	if err := env.DecodePayload(&t); err != nil || t.NewOwner == "" {
		return
	}
	b := &p.streams
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.active[t.StreamID]; ok {
		e.info.Owner = t.NewOwner
		if t.AuthorizedWriters != nil {
			e.info.AuthorizedWriters = slices.Clone(t.AuthorizedWriters)
		}
	}
}

// onStreamError fails a RequestStream whose request the gateway refused.
func (p *Participant) onStreamError(env *protocol.Envelope) {
	if !client.FromGateway(env) {
		return
	}
	b := &p.streams
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range env.CorrelationID {
		ch, ok := b.waiting[id]
		if !ok {
			continue
		}
		delete(b.waiting, id)
		ch <- streamAnswer{err: refusal(env)}
	}
}

// refusal turns a system/error into a *GatewayError.
func refusal(env *protocol.Envelope) error {
	var e protocol.SystemError
	if err := env.DecodePayload(&e); err != nil || e.Error == "" {
		return &GatewayError{Code: "unknown", Message: "malformed system/error"}
	}
	return &GatewayError{Code: e.Error, Message: e.Message}
}

// RequestStream asks the gateway for a stream with stream/request and
// returns the stream id of the gateway's stream/open. payload.Direction is
// required; payload.Target, when set, limits who receives the frames. The
// request has no to: the gateway answers every stream/request and relays it
// to the whole space. RequestStream fails as soon as the gateway refuses the
// request (with a *GatewayError, such as target_not_found), and when ctx ends (or, if ctx has no deadline, after
// Options.RequestTimeout). It returns an error wrapping ErrNotAllowed when
// the participant may not send stream/request.
func (p *Participant) RequestStream(ctx context.Context, payload protocol.StreamRequest) (streamID string, err error) {
	if payload.Direction == "" {
		return "", errors.New("participant: request stream: direction is required (upload or download)")
	}
	env, err := protocol.New(protocol.KindStreamRequest, payload)
	if err != nil {
		return "", fmt.Errorf("participant: request stream: %w", err)
	}
	if !p.CanSendTo(env.Kind, env.To, env.Payload) {
		return "", fmt.Errorf("%w: stream/request", ErrNotAllowed)
	}
	env.ID = protocol.NewID()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.opts.RequestTimeout)
		defer cancel()
	}
	ch := make(chan streamAnswer, 1)
	b := &p.streams
	defer await(&b.mu, &b.waiting, env.ID, ch)()
	if err := p.Send(ctx, env); err != nil {
		return "", fmt.Errorf("participant: request stream: %w", err)
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return "", fmt.Errorf("participant: request stream: %w", a.err)
		}
		return a.streamID, nil
	case <-ctx.Done():
		return "", fmt.Errorf("participant: request stream: no stream/open: %w", ctx.Err())
	case <-p.ctx.Done():
		return "", ErrClosed
	}
}

// ActiveStreams returns the streams open in the space, in the order they
// opened: their owner, writers, creation time and the members of the
// request that opened them, as far as the participant has seen them.
func (p *Participant) ActiveStreams() []protocol.StreamInfo {
	b := &p.streams
	b.mu.Lock()
	entries := make([]*streamEntry, 0, len(b.active))
	for _, e := range b.active {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(x, y *streamEntry) int { return cmp.Compare(x.seq, y.seq) })
	out := make([]protocol.StreamInfo, len(entries))
	for i, e := range entries {
		out[i] = e.info.Clone()
	}
	b.mu.Unlock()
	return out
}

// SendStreamData sends one data frame of stream id through the client
// (only the stream's authorized writers may; the gateway refuses others
// with a system/error). A paused or shut-down participant sends no frames:
// the error wraps ErrPaused or ErrShutdown.
func (p *Participant) SendStreamData(ctx context.Context, id string, data []byte) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if err := protocol.ValidateStreamID(id); err != nil {
		return fmt.Errorf("participant: stream %q: %w", id, err)
	}
	if err := p.controls.allowOutbound(kindStreamFrame); err != nil {
		return err
	}
	if err := p.c.SendStreamData(ctx, id, data); err != nil {
		return fmt.Errorf("participant: stream data: %w", err)
	}
	return nil
}

// OnStreamData registers f for the data frames of stream id (f gets the
// data after "#id#" and may keep it) and returns a function that removes
// it. f runs on the client's dispatch goroutine, in order with the
// envelopes, and must not block.
func (p *Participant) OnStreamData(id string, f func(data []byte)) (remove func()) {
	return p.c.OnStream(id, f)
}

// CloseStream ends stream id with stream/close (reason "" means
// "complete"), correlated to its stream/open when the participant saw it.
// The gateway accepts it from the stream's owner only; the stream leaves
// ActiveStreams when the gateway relays the close. It returns an error
// wrapping ErrNotAllowed when the participant may not send stream/close.
func (p *Participant) CloseStream(ctx context.Context, id, reason string) error {
	if id == "" {
		return errors.New("participant: close stream: no stream id")
	}
	if reason == "" {
		reason = protocol.StreamCloseComplete
	}
	env, err := protocol.New(protocol.KindStreamClose, protocol.StreamClose{StreamID: id, Reason: reason})
	if err != nil {
		return fmt.Errorf("participant: close stream: %w", err)
	}
	b := &p.streams
	b.mu.Lock()
	if e, ok := b.active[id]; ok && e.openID != "" {
		env.CorrelationID = []string{e.openID}
	}
	b.mu.Unlock()
	if !p.CanSendTo(env.Kind, env.To, env.Payload) {
		return fmt.Errorf("%w: stream/close", ErrNotAllowed)
	}
	if err := p.Send(ctx, env); err != nil {
		return fmt.Errorf("participant: close stream %s: %w", id, err)
	}
	return nil
}

// closeOwnStreams closes the streams this participant owns, for restart.
func (p *Participant) closeOwnStreams(ctx context.Context, reason string) {
	self := p.ID()
	var own []string
	for _, s := range p.ActiveStreams() {
		if s.Owner == self {
			own = append(own, s.StreamID)
		}
	}
	for _, id := range own {
		if err := p.CloseStream(ctx, id, reason); err != nil {
			p.log.Warn("closing own stream", "stream", id, "err", err)
		}
	}
}
