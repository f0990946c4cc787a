package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// Streams across nodes. A stream's changes (open, writers granted or
// revoked, ownership transferred, a writer gone, close) are records of the
// space's Log, so that every node applies them in one order, and a frame
// forwarded to another node carries the Seq of the last change of its
// stream the accepting node had applied: the receiving node holds it until
// its log follower has applied that record. Stream numbers come from a
// counter in State, so that two nodes never open the same stream id.

// Stream change operations (StreamChange.Op).
const (
	StreamOpOpen     = "open"     // Stream holds the whole stream
	StreamOpWriters  = "writers"  // Remove, then Add (a grant, a revoke, a writer's connection ended)
	StreamOpTransfer = "transfer" // Stream.Owner and OwnerOf are the new ones; Remove, then Add
	StreamOpClose    = "close"
)

// streamChangeTag starts every encoded StreamChange, so that a log follower
// tells a stream change from other records of the space's log without
// decoding them.
var streamChangeTag = []byte(`{"stream_change":`)

// StreamChange is one change of a stream, as a Log record.
type StreamChange struct {
	Op string `json:"stream_change"` // first member: see streamChangeTag
	// Origin is the process that made the change: a node skips its own
	// records, already applied when it made them. A node id is not enough:
	// a restarted node replays its earlier records.
	Origin string `json:"origin"`
	Stream Stream `json:"stream"` // ID always; the rest as Op says
	// Remove and Add change the writers: deltas, not the new list, because
	// two nodes may change one stream's writers at once (the owner's node
	// grants while a writer's node sees it leave), and deltas of different
	// writers give the same list in either order.
	Remove []string `json:"remove,omitempty"`
	Add    []string `json:"add,omitempty"`
	// Cause is the id of the participant's envelope that made the change
	// (the stream/request, the stream/close...): a node delivers another
	// node's copy of that envelope only once it has applied the change.
	Cause string `json:"cause,omitempty"`
	// Announce is the gateway's envelope that tells the participants of the
	// change (stream/open, stream/write-granted, a stream/close for an
	// owner gone...): every node delivers these same bytes once it has
	// applied the change.
	Announce []byte `json:"announce,omitempty"`
}

// EncodeStreamChange returns c's encoded form. It fails on a record over
// MaxRecordLen.
func EncodeStreamChange(c StreamChange) ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("cluster: encode stream change: %w", err)
	}
	if len(b) > MaxRecordLen {
		return nil, fmt.Errorf("%w: stream change of %d bytes", ErrInvalid, len(b))
	}
	return b, nil
}

// IsStreamChange reports whether a log record is an encoded StreamChange
// (DecodeStreamChange checks it).
func IsStreamChange(b []byte) bool { return bytes.HasPrefix(b, streamChangeTag) }

// DecodeStreamChange decodes a stream change read from the log.
func DecodeStreamChange(b []byte) (StreamChange, error) {
	var c StreamChange
	if len(b) > MaxRecordLen {
		return c, fmt.Errorf("%w: stream change of %d bytes", ErrInvalid, len(b))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%w: stream change: %w", ErrInvalid, err)
	}
	if dec.More() {
		return c, fmt.Errorf("%w: stream change: trailing data", ErrInvalid)
	}
	var err error
	switch c.Op {
	case StreamOpOpen, StreamOpTransfer:
		err = names(c.Origin, c.Stream.ID, c.Stream.Owner, c.Stream.OwnerOf)
	case StreamOpWriters, StreamOpClose:
		err = names(c.Origin, c.Stream.ID)
	default:
		err = fmt.Errorf("op %.20q", c.Op)
	}
	if err != nil {
		return c, fmt.Errorf("%w: stream change: %w", ErrInvalid, err)
	}
	return c, nil
}

// StreamCounterKey is the State key of a space's last stream number.
func StreamCounterKey() string { return "streams/next" }

// maxCounterRounds bounds the compare-and-swap retries of NextStreamNumber:
// each lost round means another node took a number meanwhile.
const maxCounterRounds = 32

// lostRound waits after a lost compare-and-swap round (NextStreamNumber,
// ClaimFloor): a random while, up to a millisecond doubled each round and at
// most 16 ms, so that nodes writing at once spread out and a lagging replica
// catches up. Without it, a node that has just won reads again before the
// loser, and under load one node lost 32 rounds in a row.
func lostRound(ctx context.Context, round int) error {
	t := time.NewTimer(rand.N(time.Millisecond << min(round, 4)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// NextStreamNumber takes the next stream number of space, unique in the
// cluster (1, 2, 3... as long as every node takes them here), by
// compare-and-swap on StreamCounterKey. A value that does not parse counts
// as 0, so that garbage under the key does not stop a space's streams.
func NextStreamNumber(ctx context.Context, st State, space string) (uint64, error) {
	key := StreamCounterKey()
	for round := range maxCounterRounds {
		cur, err := st.Get(ctx, space, key)
		var n uint64
		var opts PutOptions
		switch {
		case errors.Is(err, ErrNotFound):
			opts.IfAbsent = true
		case err != nil:
			return 0, err
		default:
			n, _ = strconv.ParseUint(string(cur.Value), 10, 64)
			opts.IfRevision = cur.Revision
		}
		n++
		_, err = st.Put(ctx, space, key, strconv.AppendUint(nil, n, 10), opts)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, ErrConflict) {
			return 0, err
		}
		if err := lostRound(ctx, round); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("%w: stream counter of %s still contested after %d rounds", ErrConflict, space, maxCounterRounds)
}
