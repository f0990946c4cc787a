package clusterlink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterhist"
	"github.com/mew-protocol/mew/protocol"
)

// Core is what a Link needs of the space it joins to the cluster: the
// space's lock, what it knows of its participants, and the core's functions
// that apply what other nodes share, each as the node that made the change
// applied it. Methods named …Locked are called with the lock held and must
// not wait; Ready is called without it.
type Core interface {
	sync.Locker

	// KnownLocked reports whether participant is a member of the space
	// here (configured or invited).
	KnownLocked(participant string) bool
	// HereLocked reports the connection name (JoinLocked's) of
	// participant's connection to this node, if it has one that is shared
	// (an output_log participant's is each node's own).
	HereLocked(participant string) (conn string, ok bool)
	// ConnectedLocked reports whether participant has any connection to
	// this node.
	ConnectedLocked(participant string) bool
	// ReplacedLocked ends participant's connection to this node, replaced
	// by one made later on another node.
	ReplacedLocked(participant string)
	// RemoteJoinedLocked: participant is connected to another node, and,
	// with announce (not a refresh of its entry), this node's participants
	// are told, who read it as info. RemoteLeftLocked: its connection
	// there (under runtimeID, announced as id) ended; with streams, what
	// that does to its streams is applied here.
	RemoteJoinedLocked(participant string, info protocol.ParticipantInfo, announce bool)
	RemoteLeftLocked(participant, runtimeID, id string, streams bool)

	// The changes of State made elsewhere. known false: the participant
	// (or proposal) they name is not known here yet, and the link keeps
	// the change until it is; applied: something changed, so envelopes
	// held for it may go.
	RemoteGrantLocked(rec cluster.Grant) (known, applied bool)
	RemoteGrantGoneLocked(participant, id string) (known, applied bool)
	RemoteControlLocked(c cluster.Control) (known bool)
	RemoteAliasLocked(a cluster.Alias) (known bool)
	// RemoteInviteLocked reports whether the participant was admitted now.
	RemoteInviteLocked(inv cluster.Invite) (admitted bool)
	// Governed proposals; self: the record was stored by this node.
	RemoteGovernedLocked(rec cluster.Approval, self bool) Governed
	RemoteVoteLocked(v cluster.ApprovalVote, self bool) (known bool)
	RemoteEndLocked(en cluster.ApprovalEnd, self bool) (known bool)
	// The floor: c holds the floor of msg in the cluster (FloorSetLocked),
	// the claim's key was deleted at rev (FloorGoneLocked), and a claim
	// made here lost to winner: its holder is told to yield (YieldLocked).
	FloorSetLocked(msg string, c cluster.Claim)
	FloorGoneLocked(msg string, rev uint64)
	YieldLocked(msg string, lost, winner cluster.Claim)
	// NoteChatLocked records another node's chat message for floor
	// control.
	NoteChatLocked(env *protocol.Envelope)
	// ApplyStreamChangeLocked applies a stream change (announce: deliver
	// its announcement; not while catching up at start); note is false for
	// an open of a stream known already (not this node's to announce
	// again), open reports the stream is open here after it.
	// DeliverFrameLocked delivers another node's frame of a stream to this
	// node's connections.
	ApplyStreamChangeLocked(c cluster.StreamChange, announce bool) (note, open bool)
	DeliverFrameLocked(streamID, writer string, frame []byte)

	// Ready returns what env, accepted on another node, waits for before
	// it is delivered here (nil: nothing); applied reports whether the
	// change of a stream made by an envelope is applied here.
	Ready(env *protocol.Envelope, applied func(id string) bool) func() bool
	// DeliverRemoteLocked delivers another node's envelope, which arrived
	// at at, to this node's participants, as the broadcast of a local one.
	DeliverRemoteLocked(data []byte, env *protocol.Envelope, at time.Time)
	// NotSharedLocked tells the senders of envelopes accepted here that
	// they may not have reached the other nodes.
	NotSharedLocked(list []Published, err error)
	// SendAwayLocked closes this node's connections to the space, for
	// them to reconnect.
	SendAwayLocked(code websocket.StatusCode, reason string)
	// PrivateLocked returns the private answers this node made for
	// participant from sequence number from on (FromNext: from the next
	// one made), made after after, at most limit, and the sequence number
	// of the next answer the node will make.
	PrivateLocked(participant string, after time.Time, from uint64, limit int) ([]clusterhist.Entry, uint64)
}

// Governed is what the core did with a proposal governed elsewhere.
type Governed int

// What the core did with a proposal governed elsewhere.
const (
	GovernedNow     Governed = iota // governed here now, as in the cluster
	ProposerUnknown                 // its proposer is not known here yet
	NotGoverned                     // already, or not at all (logged)
)

// Published is a participant's envelope handed to the Broker, whose sender
// is told if it may not have reached the other nodes.
type Published struct {
	Participant string
	ID          string
}

// Options configure a Link.
type Options struct {
	Logger *slog.Logger
	// Now is the gateway's clock; nil is time.Now.
	Now func() time.Time
	// Hist appends the space's envelopes to the cluster's history; shared
	// by the node's spaces. HistoryBytes bounds an envelope it keeps.
	Hist         *clusterhist.Writer
	HistoryBytes int
	// Lag observes how long an envelope from another node took to be
	// delivered here; Diverged counts the node falling behind the space's
	// envelopes. Either may be nil.
	Lag      func(time.Duration)
	Diverged func()
}

// Link joins a space's copy on this node to its copies on the other nodes
// of the cluster: the core's changes go out through the Writer (State,
// Presence), the Broker (envelopes) and the streams' log; the watches, the
// subscription and the log follower bring the other nodes' in, applied
// through Core.
//
// Goroutines: the writer, the state and presence watches, the confirmer,
// the streams' appender and a resubscription after a divergence, all owned
// by the Link and ended by Close; the Broker subscription's and the log
// follower's delivery goroutines are the node's.
//
// Lock order: the Core's lock, then the locks of the Writer and Confirms.
// The watch goroutines take the Core's lock to apply a change.
type Link struct {
	core  Core
	node  cluster.Node
	space string
	opts  Options
	log   *slog.Logger
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	w     *Writer
	// watches says whether the copy of State and Presence is current after
	// a reconnection (Refusal).
	watches  *Watches
	confirms *Confirms[Published]
	// behind is set from a divergence (the fabric dropped envelopes for
	// this node) until the node has subscribed again; meanwhile the space
	// refuses envelopes, as when the fabric is unreachable.
	behind atomic.Bool

	// Guarded by the Core's lock:
	conns  map[string]cluster.Member // the presence entry of each local connection, by connection name
	remote Remote                    // participants connected on other nodes
	sub    cluster.Subscription      // the current Broker subscription
	subGen uint64                    // counts the subscriptions, so that an old one's messages are dropped
	held   *Hold[heldEnvelope]       // envelopes from other nodes waiting for a change of State
	// inviting holds the invitations of ours being created in State, with
	// the watch's changes of their key meanwhile (applied if ours lost).
	inviting map[string][]cluster.Entry
	// orphans holds the changes naming a participant (or a proposal) not
	// known here yet, replayed when it is.
	orphans Orphans
	// streams is the space's share of the cluster's streams, set before
	// the node serves.
	streams *streamLink
}

// heldEnvelope is an envelope from another node not yet delivered here.
type heldEnvelope struct {
	data []byte
	env  *protocol.Envelope
	at   time.Time // when it arrived
	sent time.Time // when its node published it, for the latency metric
}

// New links space to the cluster through node: it subscribes to the
// space's envelopes and waits for the watches' snapshots, so that the node
// serves with the cluster's current grants and presence.
func New(core Core, node cluster.Node, space string, opts Options) (*Link, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Link{
		core: core, node: node, space: space, opts: opts, log: opts.Logger, ctx: ctx, stop: cancel,
		conns: make(map[string]cluster.Member), remote: make(Remote), inviting: make(map[string][]cluster.Entry),
	}
	l.held = NewHold(core, HoldLimit, l.releaseHeld, func(h heldEnvelope) {
		l.log.Warn("cluster: an envelope waited too long for its change of state", "space", space, "id", h.env.ID)
	})
	l.w = NewWriter(ctx, node, space, opts.Logger) // before the watches, which ask it what is ours
	sw, err := node.State().Watch(ctx, space)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch state: %w", err)
	}
	pw, err := node.Presence().Watch(ctx, space)
	if err != nil {
		sw.Stop()
		cancel()
		return nil, fmt.Errorf("watch presence: %w", err)
	}
	l.watches = NewWatches(node) // after the watches began
	l.wg.Go(func() { l.watches.Follow(ctx, StateWatch, sw, l.stateChange) })
	l.wg.Go(func() { l.watches.Follow(ctx, PresenceWatch, pw, l.presenceChange) })
	if l.confirms = NewConfirms[Published](node.Broker(), l.watches.Epoch); l.confirms != nil {
		l.wg.Go(func() { l.confirms.Run(ctx, l.notShared) })
	}
	// Subscribe before serving: a node that serves a space must receive its
	// envelopes from the first one on.
	if err := l.subscribe(); err != nil {
		l.Close(context.Background())
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	if err := l.startStreams(); err != nil {
		l.Close(context.Background())
		return nil, fmt.Errorf("streams: %w", err)
	}
	if err := l.watches.WaitSynced(OpTimeout); err != nil {
		l.Close(context.Background())
		return nil, err
	}
	return l, nil
}

// Close finishes the queued writes (until ctx ends) and stops the
// goroutines.
func (l *Link) Close(ctx context.Context) {
	l.w.Drain(ctx)
	l.closeStreams(ctx)
	l.stop()
	l.core.Lock()
	l.held.StopLocked()
	sub := l.sub
	l.sub = nil
	l.core.Unlock()
	if sub != nil {
		_ = sub.Unsubscribe()
	}
	<-l.w.Done()
	l.wg.Wait()
}

// Refusal is why the space accepts nothing now (the node cannot reach its
// cluster, fell behind it, or its copy is not current yet), or nil.
func (l *Link) Refusal() error {
	err := l.node.Err()
	if err == nil && l.behind.Load() {
		err = errors.New("it fell behind the space's envelopes and is subscribing again")
	}
	if err == nil && !l.watches.Current() {
		err = errors.New("it is reading the space's state again after a reconnection")
	}
	return err
}

// Current reports whether the copy of the cluster's state and presence is
// current after a reconnection.
func (l *Link) Current() bool { return l.watches.Current() }
