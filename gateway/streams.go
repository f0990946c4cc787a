package gateway

import (
	"time"

	"github.com/mew-protocol/mew/protocol"
)

// streamTable is a space's open streams. Guarded by liveSpace.mu.
type streamTable struct{}

// streamRequest handles stream/request.
func (sp *liveSpace) streamRequest(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	return relayed, nil
}

// streamClose handles stream/close.
func (sp *liveSpace) streamClose(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	return relayed, nil
}

// streamOwnership handles stream/grant-write, stream/revoke-write and
// stream/transfer-ownership.
func (sp *liveSpace) streamOwnership(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	return relayed, nil
}

// activeStreamsLocked lists the open streams for a welcome. mu must be held.
func (sp *liveSpace) activeStreamsLocked() []protocol.StreamInfo { return []protocol.StreamInfo{} }

// streamsLeaveLocked updates the streams when s leaves. mu must be held.
func (sp *liveSpace) streamsLeaveLocked(s *session) {}

// streamFrame handles a stream data frame. Streams are opened with
// stream/request; until one is open, no participant may write frames.
func (sp *liveSpace) streamFrame(o origin, data []byte) {
	id, _, err := protocol.ParseFrame(data)
	msg := "no open stream " + string(id) + " that you may write to"
	if err != nil {
		msg = "malformed stream frame: " + err.Error()
	}
	rf := refuse(ErrorUnauthorizedStream, msg)
	sid := string(id)
	rf.fields = func(dst []byte) []byte {
		return protocol.AppendString(append(dst, `,"stream_id":`...), sid)
	}
	sp.answer(o, rf)
}
