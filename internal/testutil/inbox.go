package testutil

import (
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/protocol"
)

// inboxWait bounds Wait: generous, since it only matters when the
// envelope never comes, and a loaded machine may be slow to deliver it.
const inboxWait = 20 * time.Second

// Inbox keeps the envelopes a client receives, for a test to look for or
// wait on. It keeps every one, in order of arrival: a test's inbox lives
// no longer than the test.
type Inbox struct {
	mu     sync.Mutex
	envs   []*protocol.Envelope
	signal chan struct{} // closed and replaced at each arrival
}

// Watch keeps what c receives from now on: the envelopes of kinds, or all
// of them when no kind is named.
func Watch(c *client.Client, kinds ...string) *Inbox {
	in := &Inbox{signal: make(chan struct{})}
	if len(kinds) == 0 {
		c.OnMessage(in.add)
	}
	for _, k := range kinds {
		c.OnKind(k, in.add)
	}
	return in
}

func (in *Inbox) add(env *protocol.Envelope) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.envs = append(in.envs, env)
	close(in.signal)
	in.signal = make(chan struct{})
}

// Find returns the first envelope kept that ok accepts, or nil.
func (in *Inbox) Find(ok func(*protocol.Envelope) bool) *protocol.Envelope {
	env, _ := in.find(ok)
	return env
}

// find is Find, and when nothing matches, the channel closed at the next
// arrival.
func (in *Inbox) find(ok func(*protocol.Envelope) bool) (*protocol.Envelope, chan struct{}) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, e := range in.envs {
		if ok(e) {
			return e, nil
		}
	}
	return nil, in.signal
}

// All returns the envelopes kept that ok accepts (every one for a nil ok).
func (in *Inbox) All(ok func(*protocol.Envelope) bool) []*protocol.Envelope {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []*protocol.Envelope
	for _, e := range in.envs {
		if ok == nil || ok(e) {
			out = append(out, e)
		}
	}
	return out
}

// Wait returns the first envelope that ok accepts, kept already or still
// to come, and fails the test when none has come within 20 s.
func (in *Inbox) Wait(t testing.TB, what string, ok func(*protocol.Envelope) bool) *protocol.Envelope {
	t.Helper()
	deadline := time.NewTimer(inboxWait)
	defer deadline.Stop()
	for {
		env, arrived := in.find(ok)
		if env != nil {
			return env
		}
		select {
		case <-arrived:
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", inboxWait, what)
		}
	}
}
