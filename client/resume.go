package client

import (
	"net/url"
	"strings"
	"sync"
)

// A client that reconnects resumes: it names the last envelope it received
// (the resume query parameter of the WebSocket URL), and the gateway, on
// whichever node it reaches, replays what came after it from the space's
// history before anything else, or says (a system/error resume_gap) that it
// no longer has it. A node of a cluster replays from a little before, since
// envelopes from different nodes may have reached it in another order than
// the node the client left: the client drops what it has seen, by id, so
// that handlers see each envelope once.

// seenWindow is how many of the latest envelope ids a client remembers to
// drop a replay's repeats: more than a node's history replays (its default
// HistorySize is 1024).
const seenWindow = 4096

// seenIDs is a window of the latest envelope ids received, in order.
type seenIDs struct {
	mu   sync.Mutex
	ring []string // seenWindow slots, filled in turn
	next int      // the slot the next id goes to
	set  map[string]int
	last string // the latest id, what a reconnect resumes from
	// checks is how many envelopes from now on are checked for repeats:
	// those of a resumed connection, which begin with the replay. Outside
	// a replay an id seen twice is delivered twice, as the gateway sent it.
	checks int
}

// repeat reports whether id is a repeat within a replay, which the caller
// drops. An empty id is never a repeat.
func (s *seenIDs) repeat(id string) bool {
	if id == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.checks <= 0 {
		return false
	}
	s.checks--
	_, ok := s.set[id]
	return ok
}

// add records id, received and handed to the handlers: a reconnect resumes
// after the latest.
func (s *seenIDs) add(id string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ring == nil {
		s.ring, s.set = make([]string, seenWindow), make(map[string]int, seenWindow)
	}
	if old := s.ring[s.next]; old != "" && s.set[old] == s.next {
		delete(s.set, old) // unless seen again since, in a later slot
	}
	s.ring[s.next], s.set[id] = id, s.next
	s.next = (s.next + 1) % seenWindow
	s.last = id
}

// resuming returns the id to resume from, and checks the next seenWindow
// envelopes for repeats; "" before the first envelope.
func (s *seenIDs) resuming() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != "" {
		s.checks = seenWindow
	}
	return s.last
}

// resumeURL returns u with the resume parameter naming the latest envelope
// received, or u itself before the first one.
func (c *Client) resumeURL(u string) string {
	id := c.seen.resuming()
	if id == "" {
		return u
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "resume=" + url.QueryEscape(id)
}
