package cluster

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors. Implementations wrap them with %w, so callers test them
// with errors.Is.
var (
	// ErrNotFound: the key does not exist (or has expired or been deleted).
	ErrNotFound = errors.New("cluster: not found")
	// ErrConflict: a conditional write lost: the key's revision was not the
	// one expected, or the key existed when it was to be created.
	ErrConflict = errors.New("cluster: revision conflict")
	// ErrUnavailable: the node cannot reach the shared fabric now. A gateway
	// that sees it stops accepting envelopes for shared spaces rather than
	// diverge from the other nodes.
	ErrUnavailable = errors.New("cluster: unavailable")
	// ErrClosed: the node was closed.
	ErrClosed = errors.New("cluster: node closed")
	// ErrInvalid: a name, key or value is out of bounds, or a value read
	// from the fabric does not decode (another node may be buggy).
	ErrInvalid = errors.New("cluster: invalid")
)

// Bounds on what the cluster stores. They keep a buggy or hostile node from
// making the others allocate without limit.
const (
	MaxNameLen   = 256      // a space id, participant id, node id or one key segment, in bytes
	MaxKeyLen    = 1024     // a whole State key, in bytes
	MaxValueLen  = 64 << 10 // a State value or a presence record, in bytes
	MaxRecordLen = 1 << 20  // a Log record, in bytes
	MaxReadLen   = 1000     // the most records one Log.Read returns
)

// Node is one gateway node's handle on the cluster: everything the node
// shares with the others goes through it. A Node is safe for concurrent use.
// Close stops every goroutine it started and ends every subscription and
// watch.
type Node interface {
	// ID is the node's id, unique in the cluster.
	ID() string
	Broker() Broker
	Presence() Presence
	State() State
	Log() Log
	// History is the log of the envelopes HTTP pollers read, the same on
	// every node: a Log of its own, with its own retention, so that chat
	// traffic never evicts the stream changes Log keeps.
	History() Log
	// Err is nil while the node can reach the fabric; otherwise an error
	// wrapping ErrUnavailable (or ErrClosed) that says why.
	Err() error
	Close() error
}

// Message is an envelope published by another node, or the notice that
// some were lost.
type Message struct {
	Node string    // the publishing node's id
	Data []byte    // the envelope's bytes, as published; the handler may keep them
	Sent time.Time // when the publishing node published it, by its clock; zero if not known
	// Lost, when set, is the only field: the fabric dropped messages of
	// this subscription because the node did not take them fast enough (a
	// slow consumer). The subscriber has missed envelopes others
	// delivered: it has diverged. Reported once per subscription.
	Lost bool
}

// Stats are counters a node keeps about its link to the fabric, for
// monitoring.
type Stats struct {
	Reconnects    uint64 // reconnections to the fabric since the node started
	SlowConsumers uint64 // times the fabric dropped messages for this node, which did not read them fast enough
}

// EpochReporter is implemented by nodes whose link to the fabric can be cut
// and restored while they run. Epoch counts the restorations; it grows
// before Err turns nil again. The OpSynced and OpResynced entries of a watch
// carry in Revision the epoch whose state they reflect, so that a consumer
// knows its copy is current when every watch it follows has reported the
// node's Epoch: until then a change made elsewhere during the cut (a
// revoked grant) may not be applied yet, and the node must not act on its
// copy.
type EpochReporter interface {
	Epoch() uint64
}

// StatsReporter is implemented by nodes that keep Stats.
type StatsReporter interface {
	Stats() Stats
}

// Broker fans a space's envelopes out to the other nodes. A node delivers
// what it accepted to its own connections itself; Publish carries it to
// every other node that subscribed to the space, never back to the
// publisher. The messages of one publishing node reach each subscriber in
// the order they were published.
type Broker interface {
	// Publish sends data to the other nodes' subscribers of space. It does
	// not wait for them.
	Publish(ctx context.Context, space string, data []byte) error
	// Subscribe calls h for each message published to space by another
	// node, one at a time, in order (and once with a Lost message if the
	// fabric drops some for this subscription). h must not block for long: it runs on
	// the subscription's delivery path. The subscription ends on
	// Unsubscribe, when ctx is done, or when the node closes.
	Subscribe(ctx context.Context, space string, h func(Message)) (Subscription, error)
}

// Confirmer is implemented by brokers whose Publish returns before the
// fabric has the message (bytes written into a connection that may be
// dying). Confirm returns once everything published before the call has
// reached the fabric, or an error wrapping ErrUnavailable when some of it
// may not have. A reconnection between a Publish and a successful Confirm
// may have lost it too: the caller compares the node's Epoch
// (EpochReporter).
type Confirmer interface {
	Confirm(ctx context.Context) error
}

// Keeper is implemented by Brokers that can put what they publish in the
// node's History with the same message, so that an envelope kept for
// pollers crosses the fabric once (on NATS, the history's stream captures
// the subject the envelope is published on).
type Keeper interface {
	// Keep appends prefix+data to space's History, as History().Append
	// would, and, when share is set, publishes data to the other nodes'
	// subscribers as Publish does; one message does both, in its place
	// among this node's Publish and Keep calls. prefix is at most
	// MaxKeepPrefix bytes. Keep does not wait for the History: done is
	// called once, with nil when the record is stored or the error that
	// kept it out, possibly before Keep returns and on any goroutine; it
	// must not block nor take a lock Keep's caller may hold. An error
	// returned means nothing was sent, and done is not called.
	Keep(ctx context.Context, space string, prefix, data []byte, share bool, done func(error)) error
}

// MaxKeepPrefix bounds Keeper.Keep's prefix.
const MaxKeepPrefix = 64

// Subscription is a Broker subscription.
type Subscription interface {
	Unsubscribe() error
}

// Op is what happened to a key.
type Op uint8

// The ops a watch reports.
const (
	OpPut    Op = iota + 1 // the key was written
	OpDelete               // the key was deleted, or expired
	OpSynced               // marker: every key that existed when the watch began has been sent
	// OpResynced is a marker after the node was cut off from the fabric
	// and is back: the watch has read every key again and handed on every
	// change it had missed (see EpochReporter). A consumer that applies the
	// changes in order has applied them when it receives it.
	OpResynced
)

func (o Op) String() string {
	switch o {
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpSynced:
		return "synced"
	case OpResynced:
		return "resynced"
	}
	return "op?"
}

// Entry is one key of a space's state, or a change to it.
type Entry struct {
	Key      string
	Value    []byte // nil for OpDelete and OpSynced
	Revision uint64 // increases with every write to the space's state
	Op       Op
}

// Watcher delivers the changes to a space's keys: first the current value of
// every key (OpPut), then one OpSynced entry, then each change as it
// happens, in revision order. After the node was cut off from the fabric it
// re-reads the keys, hands on what changed meanwhile, and then an
// OpResynced entry (see EpochReporter); consumers skip the markers. A change superseded by a later change of the
// same key before it was delivered may be skipped (the shared state keeps
// one revision per key), but the last change of every key is delivered:
// a watcher's copy converges to the state. The channel is closed when the
// watch ends (Stop, its context, or the node's Close). A consumer must keep
// reading: an implementation may buffer, but it does not drop changes.
type Watcher interface {
	Changes() <-chan Entry
	Stop()
}

// PutOptions are the conditions and lifetime of a State write. The zero
// value is an unconditional write that never expires.
type PutOptions struct {
	// IfRevision, when not 0, makes the write succeed only if the key's
	// current revision is this one (compare-and-swap).
	IfRevision uint64
	// IfAbsent makes the write succeed only if the key does not exist.
	IfAbsent bool
	// TTL, when not 0, deletes the key that long after this write, unless
	// written again. A watch reports the expiry as OpDelete. Implementations
	// round it up to whole seconds.
	TTL time.Duration
}

// State is the mutable state of spaces as versioned keys. Keys are made of
// segments separated by '/' (see the key builders in records.go); each
// segment is 1 to MaxNameLen bytes of any UTF-8 but '/'.
type State interface {
	// Get returns the key's current entry, or an error wrapping ErrNotFound.
	// On a replicated fabric it may lag a moment behind a write or an
	// expiry (a replica may answer): decide a write by IfRevision, never
	// by what Get returned.
	Get(ctx context.Context, space, key string) (Entry, error)
	// Put writes value under key and returns the new revision. A condition
	// in o that fails gives an error wrapping ErrConflict.
	Put(ctx context.Context, space, key string, value []byte, o PutOptions) (uint64, error)
	// Delete removes key. When ifRevision is not 0, only if that is still
	// its revision (else ErrConflict). Deleting a missing key is no error.
	Delete(ctx context.Context, space, key string, ifRevision uint64) error
	// Watch follows every key of space. See Watcher.
	Watch(ctx context.Context, space string) (Watcher, error)
}

// Presence says which participants are connected, on which node, with
// liveness: a node refreshes the entries of its connections, and an entry
// whose node stopped refreshing it (a killed node) expires after the TTL.
// One logical participant has at most one entry in the cluster: Join
// replaces any entry on any node, and the node that held the previous one
// learns it from its watch (an OpPut whose Member.Conn is not its own), and
// drops that connection, as one gateway does when a participant connects
// twice.
type Presence interface {
	// Join records m (m.Node is set to this node) and keeps it alive until
	// Leave or the node's Close.
	Join(ctx context.Context, space string, m Member) error
	// Leave removes the participant's entry if it is still conn's.
	Leave(ctx context.Context, space, participant, conn string) error
	// List returns the participants of space connected anywhere. On a
	// replicated fabric it may lag a moment behind a Join or Leave, as
	// State.Get may.
	List(ctx context.Context, space string) ([]Member, error)
	// Watch follows the space's presence: the Entry keys are participant ids
	// and the values encoded Members (DecodeMember).
	Watch(ctx context.Context, space string) (Watcher, error)
	// TTL is how long an entry outlives its node's last refresh.
	TTL() time.Duration
}

// Record is one entry of a space's Log.
type Record struct {
	Seq  uint64    // increases along the space's log; not contiguous
	Node string    // the node that appended it
	At   time.Time // when the log stored it
	Data []byte
}

// Log is a space's retained, totally ordered sequence of records: every
// node appends to it and every node reads the same order. It serves where
// an order across nodes matters more than the Broker's per-sender order: a
// stream's ownership change must reach every node before the frames its
// new owner writes after it, and polling history must read the same on
// every node. A log keeps a bounded number of records per space (the
// implementation's retention); the oldest go first.
type Log interface {
	// Append adds data to the end of space's log and returns its Seq.
	Append(ctx context.Context, space string, data []byte) (uint64, error)
	// Read returns up to limit (at most MaxReadLen) records of space with
	// Seq > after, oldest first, without waiting for more.
	Read(ctx context.Context, space string, after uint64, limit int) ([]Record, error)
	// Follow calls h with each record of space with Seq > after, in order,
	// one at a time, then with each record appended later, until
	// Unsubscribe, ctx, or the node's Close.
	Follow(ctx context.Context, space string, after uint64, h func(Record)) (Subscription, error)
}

// Pending is one record to append with AppendBatch.
type Pending struct {
	Space string
	Data  []byte
}

// BatchAppender is implemented by Logs that append many records without a
// round trip each.
type BatchAppender interface {
	// AppendBatch appends each record to its space's log, in the order
	// given, and returns how many were not appended (with the first error
	// met): those that were keep their order among themselves.
	AppendBatch(ctx context.Context, recs []Pending) (failed int, err error)
}
