package natscluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// Defaults of Options.
const (
	// DefaultLogRetention is how many records each space's log keeps.
	DefaultLogRetention = 10000
	// DefaultHistoryRetention is how many records each space's history
	// keeps: as many as a gateway keeps for polling by default.
	DefaultHistoryRetention = 1024
	// DefaultHistoryBytes bounds the history stream of all spaces.
	DefaultHistoryBytes = 256 << 20
)

// The logs of all spaces are one JetStream stream, mew_<cluster>_log, with
// one subject per space, mew.<cluster>.log.<space>, and a per-subject limit:
// each space has its own ordered, bounded log, and there is one stream to
// create and replicate, not one per space.

func logStream(cluster string) string   { return "mew_" + cluster + "_log" }
func logSubjects(cluster string) string { return "mew." + cluster + ".log.>" }
func logSubject(cluster, space string) string {
	return "mew." + cluster + ".log." + escape(space)
}

// The polling history of all spaces is another stream, mew_<cluster>_history:
// chat traffic fills it, and must not evict the stream changes of the log.
// It captures the spaces' kept subjects, mew.<cluster>.space.<space>.k
// (keep.go), so that an envelope published there for the other nodes is
// stored by the same message.
func historyStream(cluster string) string   { return "mew_" + cluster + "_history" }
func historySubjects(cluster string) string { return subjectPrefix(cluster) + "*" + suffixKept }

func (n *Node) createLog(ctx context.Context, o Options) error {
	keep := o.LogRetention
	if keep <= 0 {
		keep = DefaultLogRetention
	}
	_, err := createAnswered(ctx, func(ctx context.Context) (jetstream.Stream, error) {
		return n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: logStream(o.Cluster), Description: "mew: the ordered logs of spaces",
			Subjects: []string{logSubjects(o.Cluster)}, MaxMsgsPerSubject: int64(keep),
			MaxMsgSize: MinMaxPayload, Discard: jetstream.DiscardOld,
			Storage: jetstream.FileStorage, Replicas: o.Replicas,
		})
	})
	if err != nil {
		return err
	}
	hkeep, hbytes := o.HistoryRetention, o.HistoryBytes
	if hkeep <= 0 {
		hkeep = DefaultHistoryRetention
	}
	if hbytes <= 0 {
		hbytes = DefaultHistoryBytes
	}
	_, err = createAnswered(ctx, func(ctx context.Context) (jetstream.Stream, error) {
		return n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: historyStream(o.Cluster), Description: "mew: the polling history of spaces",
			Subjects: []string{historySubjects(o.Cluster)}, MaxMsgsPerSubject: int64(hkeep), MaxBytes: hbytes,
			MaxMsgSize: MinMaxPayload, Discard: jetstream.DiscardOld,
			Storage: jetstream.FileStorage, Replicas: o.Replicas,
		})
	})
	return err
}

// logView is a node's view of one of the cluster's log streams: the stream
// changes' (Log) or the polling history's (History).
type logView struct {
	n      *Node
	stream string
	prefix string // of the subjects; the escaped space follows
	suffix string // of the subjects, after the space
	// only marks the records appended for the history alone, which the
	// Broker's subscribers of the same subject pass over.
	only bool
}

var (
	_ cluster.Log           = logView{}
	_ cluster.BatchAppender = logView{}
)

func (v logView) subject(space string) string { return v.prefix + escape(space) + v.suffix }

// header is the header of an appended record.
func (v logView) header() nats.Header {
	h := nats.Header{headerNode: []string{v.n.id}}
	if v.only {
		h[headerOnly] = []string{onlyHistory}
	}
	return h
}

func (v logView) Append(ctx context.Context, space string, data []byte) (uint64, error) {
	if err := cluster.CheckName(space); err != nil {
		return 0, err
	}
	if len(data) > cluster.MaxRecordLen {
		return 0, fmt.Errorf("natscluster: record of %d bytes: %w", len(data), cluster.ErrInvalid)
	}
	n := v.n
	if err := n.Err(); err != nil {
		return 0, err
	}
	msg := &nats.Msg{Subject: v.subject(space), Data: data, Header: v.header()}
	ack, err := writeAgain(ctx, n, func() (*jetstream.PubAck, error) { return n.js.PublishMsg(ctx, msg) })
	if err != nil {
		return 0, fmt.Errorf("natscluster: append to %s: %w", space, n.unavailable(err))
	}
	return ack.Sequence, nil
}

// consumer makes an ordered consumer of space's log from after+1.
func (v logView) consumer(ctx context.Context, space string, after uint64) (jetstream.Consumer, error) {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{v.subject(space)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	return v.n.js.OrderedConsumer(ctx, v.stream, cfg)
}

// askAgain calls f until it answers something other than "no responders",
// for up to noResponderWait. No responders means that no JetStream server
// answered a request (here: the creation of an ordered consumer, made by
// its first fetch or consume), which in a NATS cluster happens for a moment
// while its servers elect a leader.
func askAgain[T any](ctx context.Context, f func() (T, error)) (T, error) {
	wait := 25 * time.Millisecond
	deadline := time.Now().Add(noResponderWait)
	for {
		got, err := f()
		if !errors.Is(err, nats.ErrNoResponders) || time.Now().Add(wait).After(deadline) {
			return got, err
		}
		select {
		case <-ctx.Done():
			return got, err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// noResponderWait is how long a read or follow of a log asks again while no
// JetStream server answers.
const noResponderWait = 2 * time.Second

// record converts a log message; one another node wrote wrongly is
// skipped.
func record(m jetstream.Msg) (cluster.Record, bool) {
	meta, err := m.Metadata()
	if err != nil || len(m.Data()) > cluster.MaxRecordLen {
		return cluster.Record{}, false
	}
	from := m.Headers().Get(headerNode)
	if cluster.CheckName(from) != nil {
		return cluster.Record{}, false
	}
	data, ok := keptRecord(m.Headers(), m.Data())
	if !ok {
		return cluster.Record{}, false
	}
	return cluster.Record{Seq: meta.Sequence.Stream, Node: from, At: meta.Timestamp, Data: data}, true
}

// handle is the log's stream, asked of the server once.
func (v logView) handle(ctx context.Context) (jetstream.Stream, error) {
	if h, ok := v.n.streams.Load(v.stream); ok {
		return h.(jetstream.Stream), nil
	}
	h, err := v.n.js.Stream(ctx, v.stream)
	if err != nil {
		return nil, err
	}
	v.n.streams.Store(v.stream, h)
	return h, nil
}

// tail is the sequence number of space's last record as the stream's leader
// has it (0: none). The leader has every record whose append was answered;
// the server a consumer is made on may not have applied the newest ones
// yet (a replica that was not part of their quorum), so a read goes on
// until it has seen the tail: what a node appended and then reads, it
// reads.
func (v logView) tail(ctx context.Context, space string) (uint64, error) {
	h, err := v.handle(ctx)
	if err != nil {
		return 0, err
	}
	m, err := h.GetLastMsgForSubject(ctx, v.subject(space))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

// catchUpWait bounds how long a read waits for its consumer's server to
// reach the tail the leader named.
const catchUpWait = 2 * time.Second

func (v logView) Read(ctx context.Context, space string, after uint64, limit int) ([]cluster.Record, error) {
	if err := cluster.CheckName(space); err != nil {
		return nil, err
	}
	n := v.n
	if err := n.Err(); err != nil {
		return nil, err
	}
	limit = min(max(limit, 0), cluster.MaxReadLen)
	if limit == 0 || after == math.MaxUint64 {
		return nil, nil // nothing can come after the last sequence number
	}
	tail, err := askAgain(ctx, func() (uint64, error) { return v.tail(ctx, space) })
	if err != nil {
		return nil, fmt.Errorf("natscluster: read %s: %w", space, n.unavailable(err))
	}
	if tail <= after {
		return nil, nil // nothing after: no consumer to make
	}
	// Asked again as a whole: the pull request may find no responder too,
	// when the consumer was made on another server of a NATS cluster whose
	// routes have not carried its interest to ours yet.
	out, err := askAgain(ctx, func() ([]cluster.Record, error) {
		cons, err := v.consumer(ctx, space, after)
		if err != nil {
			return nil, err
		}
		var out []cluster.Record
		seen := after
		wait, deadline := 2*time.Millisecond, time.Now().Add(catchUpWait)
		for {
			batch, err := cons.FetchNoWait(limit - len(out))
			if err != nil {
				return nil, err
			}
			for m := range batch.Messages() {
				if meta, err := m.Metadata(); err == nil {
					seen = max(seen, meta.Sequence.Stream)
				}
				if r, ok := record(m); ok {
					out = append(out, r)
				}
			}
			if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
				return nil, err
			}
			if len(out) >= limit || seen >= tail || time.Now().After(deadline) {
				return out, nil
			}
			select { // the consumer's server is behind the leader: a moment
			case <-ctx.Done():
				return out, nil
			case <-time.After(wait):
			}
			wait = min(2*wait, 50*time.Millisecond)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("natscluster: read %s: %w", space, n.unavailable(err))
	}
	return out, nil
}

type follow struct {
	n    *Node
	cc   jetstream.ConsumeContext
	once sync.Once
}

func (v logView) Follow(ctx context.Context, space string, after uint64, h func(cluster.Record)) (cluster.Subscription, error) {
	if err := cluster.CheckName(space); err != nil {
		return nil, err
	}
	n := v.n
	if err := n.Err(); err != nil {
		return nil, err
	}
	cc, err := askAgain(ctx, func() (jetstream.ConsumeContext, error) {
		cons, err := v.consumer(ctx, space, after)
		if err != nil {
			return nil, err
		}
		return cons.Consume(func(m jetstream.Msg) {
			if r, ok := record(m); ok {
				h(r)
			}
		})
	})
	if err != nil {
		return nil, fmt.Errorf("natscluster: follow %s: %w", space, n.unavailable(err))
	}
	f := &follow{n: n, cc: cc}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		_ = f.Unsubscribe()
		return nil, cluster.ErrClosed
	}
	n.follows[f] = struct{}{}
	n.mu.Unlock()
	context.AfterFunc(ctx, func() { _ = f.Unsubscribe() })
	return f, nil
}

// Unsubscribe ends the follow and waits until its handler has returned.
func (f *follow) Unsubscribe() error {
	f.once.Do(func() {
		f.n.mu.Lock()
		delete(f.n.follows, f)
		f.n.mu.Unlock()
		f.cc.Stop()
	})
	select {
	case <-f.cc.Closed():
	case <-time.After(5 * time.Second):
	}
	return nil
}

// AppendBatch implements cluster.BatchAppender: it publishes every record
// without waiting (JetStream stores what one connection publishes in the
// order published), then waits for the acknowledgements.
func (v logView) AppendBatch(ctx context.Context, recs []cluster.Pending) (int, error) {
	n := v.n
	if err := n.Err(); err != nil {
		return len(recs), err
	}
	failed := 0
	var first error
	fail := func(err error) {
		failed++
		if first == nil {
			first = err
		}
	}
	futures := make([]jetstream.PubAckFuture, 0, len(recs))
	for _, r := range recs {
		if err := cluster.CheckName(r.Space); err != nil {
			fail(err)
			continue
		}
		if len(r.Data) > cluster.MaxRecordLen {
			fail(fmt.Errorf("natscluster: record of %d bytes: %w", len(r.Data), cluster.ErrInvalid))
			continue
		}
		msg := &nats.Msg{Subject: v.subject(r.Space), Data: r.Data, Header: v.header()}
		f, err := n.js.PublishMsgAsync(msg)
		if err != nil {
			fail(fmt.Errorf("natscluster: append to %s: %w", r.Space, n.unavailable(err)))
			continue
		}
		futures = append(futures, f)
	}
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			fail(fmt.Errorf("natscluster: append: %w", n.unavailable(err)))
		case <-ctx.Done():
			for range futures[i:] {
				fail(fmt.Errorf("natscluster: append: %w: %w", cluster.ErrUnavailable, ctx.Err()))
			}
			return failed, first
		}
	}
	return failed, first
}
