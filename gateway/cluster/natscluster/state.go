package natscluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/mew-protocol/mew/gateway/cluster"
)

type state struct{ n *Node }

func check(space, key string) error {
	if err := cluster.CheckName(space); err != nil {
		return err
	}
	return cluster.CheckKey(key)
}

// isConflict reports a failed compare-and-swap. JetStream reports it as a
// wrong last sequence, whose code differs between replicated and single
// streams.
func isConflict(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

func (s state) Get(ctx context.Context, space, key string) (cluster.Entry, error) {
	if err := check(space, key); err != nil {
		return cluster.Entry{}, err
	}
	n := s.n
	if err := n.Err(); err != nil {
		return cluster.Entry{}, err
	}
	e, err := n.state.Get(ctx, kvKey(space, key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return cluster.Entry{}, fmt.Errorf("natscluster: %s %s: %w", space, key, cluster.ErrNotFound)
	}
	if err != nil {
		return cluster.Entry{}, fmt.Errorf("natscluster: get %s %s: %w", space, key, n.unavailable(err))
	}
	if len(e.Value()) > cluster.MaxValueLen {
		return cluster.Entry{}, fmt.Errorf("natscluster: %s %s: value of %d bytes: %w", space, key, len(e.Value()), cluster.ErrInvalid)
	}
	return cluster.Entry{Key: key, Value: e.Value(), Revision: e.Revision(), Op: cluster.OpPut}, nil
}

func (s state) Put(ctx context.Context, space, key string, value []byte, o cluster.PutOptions) (uint64, error) {
	if err := check(space, key); err != nil {
		return 0, err
	}
	if len(value) > cluster.MaxValueLen {
		return 0, fmt.Errorf("natscluster: value of %d bytes: %w", len(value), cluster.ErrInvalid)
	}
	n := s.n
	if err := n.Err(); err != nil {
		return 0, err
	}
	k := kvKey(space, key)
	ttl := o.TTL
	if ttl > 0 {
		ttl = (ttl + 999_999_999) / 1e9 * 1e9 // whole seconds, as the server counts them
	}
	var rev uint64
	var err error
	switch {
	case o.IfAbsent:
		var opts []jetstream.KVCreateOpt
		if ttl > 0 {
			opts = append(opts, jetstream.KeyTTL(ttl))
		}
		rev, err = writeAgain(ctx, n, func() (uint64, error) { return n.state.Create(ctx, k, value, opts...) })
	case ttl == 0 && o.IfRevision != 0:
		rev, err = writeAgain(ctx, n, func() (uint64, error) { return n.state.Update(ctx, k, value, o.IfRevision) })
	case ttl == 0:
		rev, err = writeAgain(ctx, n, func() (uint64, error) { return n.state.Put(ctx, k, value) })
	default:
		// KeyValue has no TTL on Put or Update: publish to the bucket's
		// subject with the headers they would send, and the TTL.
		opts := []jetstream.PublishOpt{jetstream.WithMsgTTL(ttl)}
		if o.IfRevision != 0 {
			opts = append(opts, jetstream.WithExpectLastSequencePerSubject(o.IfRevision))
		}
		msg := nats.NewMsg("$KV." + n.state.Bucket() + "." + k)
		msg.Data = value
		var ack *jetstream.PubAck
		ack, err = writeAgain(ctx, n, func() (*jetstream.PubAck, error) { return n.js.PublishMsg(ctx, msg, opts...) })
		if err == nil {
			rev = ack.Sequence
		}
	}
	if isConflict(err) {
		return 0, fmt.Errorf("natscluster: put %s %s: %w", space, key, cluster.ErrConflict)
	}
	if err != nil {
		return 0, fmt.Errorf("natscluster: put %s %s: %w", space, key, n.unavailable(err))
	}
	return rev, nil
}

// Delete purges the key and lets its marker expire after markerTTL, so
// that deleted grants and claims do not pile up as tombstones.
//
// Reads (Get) may be served by any replica (JetStream's direct get), so
// nothing here decides a write from a read: conditions are compare-and-swap,
// checked by the stream's leader.
func (s state) Delete(ctx context.Context, space, key string, ifRevision uint64) error {
	if err := check(space, key); err != nil {
		return err
	}
	n := s.n
	if err := n.Err(); err != nil {
		return err
	}
	k := kvKey(space, key)
	// No Get first to skip a missing key: on replicated buckets a Get may
	// be answered by a follower that has not seen the key yet, and the
	// delete would be lost. Purging a missing key leaves a marker that
	// expires like the others.
	opts := []jetstream.KVDeleteOpt{jetstream.PurgeTTL(markerTTL)}
	if ifRevision != 0 {
		opts = append(opts, jetstream.LastRevision(ifRevision))
	}
	_, err := writeAgain(ctx, n, func() (struct{}, error) { return struct{}{}, n.state.Purge(ctx, k, opts...) })
	if isConflict(err) {
		return fmt.Errorf("natscluster: delete %s %s: %w", space, key, cluster.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("natscluster: delete %s %s: %w", space, key, n.unavailable(err))
	}
	return nil
}

func (s state) Watch(ctx context.Context, space string) (cluster.Watcher, error) {
	return s.n.watch(ctx, s.n.state, space)
}
