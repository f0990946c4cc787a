package clusterlink

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// A space follows two watches: of its State and of its Presence.
const (
	StateWatch = iota
	PresenceWatch
	nWatches
)

// Watches follows a space's State and Presence watches and tells whether
// the space's copy of them is current: both snapshots delivered, and, when
// the node counts its reconnections (cluster.EpochReporter), every change
// made before the latest reconnection applied. Until then a change made
// elsewhere during a cut (a revoked grant) may not be in force here, and
// the space must refuse what it would enforce with it.
type Watches struct {
	epochs   cluster.EpochReporter // nil when the node keeps no epochs
	synced   [nWatches]chan struct{}
	resynced [nWatches]atomic.Uint64 // the epoch each watch's copy is current for
}

// NewWatches reads the node's epoch; call it after the watches began, so
// that a reconnection before is in their snapshots and one after makes
// them report cluster.OpResynced.
func NewWatches(node cluster.Node) *Watches {
	ws := &Watches{}
	for i := range ws.synced {
		ws.synced[i] = make(chan struct{})
	}
	if ep, ok := node.(cluster.EpochReporter); ok {
		ws.epochs = ep
		e := ep.Epoch()
		for i := range ws.resynced {
			ws.resynced[i].Store(e)
		}
	}
	return ws
}

// Follow applies w's changes (which is StateWatch or PresenceWatch) until
// the watcher or ctx ends, then stops w. It is a goroutine's body.
func (ws *Watches) Follow(ctx context.Context, which int, w cluster.Watcher, apply func(cluster.Entry)) {
	defer w.Stop()
	closed := false
	for {
		select {
		case e, ok := <-w.Changes():
			if !ok {
				return
			}
			switch e.Op {
			case cluster.OpSynced:
				if !closed {
					close(ws.synced[which])
					closed = true
				}
				continue
			case cluster.OpResynced:
				if e.Revision > ws.resynced[which].Load() {
					ws.resynced[which].Store(e.Revision)
				}
				continue
			}
			apply(e)
		case <-ctx.Done():
			return
		}
	}
}

// WaitSynced waits until both watches have delivered their snapshots, for
// at most limit.
func (ws *Watches) WaitSynced(limit time.Duration) error {
	t := time.NewTimer(limit)
	defer t.Stop()
	for _, ch := range ws.synced {
		select {
		case <-ch:
		case <-t.C:
			return errors.New("the state and presence of the space did not arrive in time")
		}
	}
	return nil
}

// Current reports whether both watches have reported the node's epoch.
func (ws *Watches) Current() bool {
	if ws.epochs == nil {
		return true
	}
	e := ws.epochs.Epoch()
	for i := range ws.resynced {
		if ws.resynced[i].Load() < e {
			return false
		}
	}
	return true
}

// Epoch is the node's reconnection count, 0 when it keeps none.
func (ws *Watches) Epoch() uint64 {
	if ws.epochs == nil {
		return 0
	}
	return ws.epochs.Epoch()
}
