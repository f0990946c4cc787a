package gateway

import "time"

// history keeps a space's most recent envelopes for HTTP polling, bounded
// both by count and by bytes, so that a burst of large envelopes cannot pin
// more than maxBytes of memory. It is guarded by its space's mu.
//
// Private entries (the gateway's answers to one participant: errors, the
// invite-ack with its token) belong to the logical participant they were
// for, never to a runtime id: an id is a name another participant could
// take, a member is not.
type history struct {
	buf      []entry // a ring: entry seq lives at buf[seq % len(buf)]
	first    uint64  // sequence number of the oldest entry kept
	next     uint64  // sequence number of the next entry
	bytes    int     // total size of the entries kept
	maxBytes int
}

type entry struct {
	seq   uint64
	at    time.Time
	id    string // the envelope's id, for a resume
	data  []byte
	owner *member // nil: visible to everyone; else only to this participant
}

func newHistory(size, maxBytes int) *history {
	return &history{buf: make([]entry, size), maxBytes: maxBytes}
}

func (h *history) add(at time.Time, id string, data []byte, owner *member) {
	if len(data) > h.maxBytes {
		// Never kept, but numbered, so that a poller's cursor moves past it.
		data = nil
	}
	if h.next-h.first == uint64(len(h.buf)) {
		h.dropOldest()
	}
	h.buf[h.next%uint64(len(h.buf))] = entry{seq: h.next, at: at, id: id, data: data, owner: owner}
	h.next++
	h.bytes += len(data)
	for h.bytes > h.maxBytes {
		h.dropOldest()
	}
}

// dropOldest forgets the oldest entry kept. Every sequence number from first
// to next has its slot, so the oldest is always at first.
func (h *history) dropOldest() {
	e := &h.buf[h.first%uint64(len(h.buf))]
	h.bytes -= len(e.data)
	*e = entry{} // let the data go now
	h.first++
}

// since returns up to limit entries visible to m, recorded after the time
// after (when set) and with a sequence number ≥ from.
func (h *history) since(after time.Time, from uint64, limit int, m *member) []entry {
	return h.collect(from, limit, func(e *entry) bool { return e.visible(after, m) })
}

// privateSince is since for the entries that are m's alone (a node of a
// cluster polls the public ones from the cluster's history).
func (h *history) privateSince(after time.Time, from uint64, limit int, m *member) []entry {
	return h.collect(from, limit, func(e *entry) bool { return e.owner != nil && e.visible(after, m) })
}

// collect returns up to limit entries from sequence number from on that
// keep accepts.
func (h *history) collect(from uint64, limit int, keep func(*entry) bool) []entry {
	var out []entry
	for seq := max(h.first, from); seq < h.next && len(out) < limit; seq++ {
		if e := &h.buf[seq%uint64(len(h.buf))]; keep(e) {
			out = append(out, *e)
		}
	}
	return out
}

// resume returns what m missed after the envelope id: the entries visible
// to m recorded after it, and those recorded within skew before it (on a
// node of a cluster, where envelopes from different nodes may have been
// delivered in another order on the node m left; the client drops what it
// has seen). found is false when id is not in the history (too old, or
// never delivered here).
func (h *history) resume(id string, skew time.Duration, m *member) (out []entry, found bool) {
	seq := h.next
	for s := h.next; s > h.first; s-- {
		if e := &h.buf[(s-1)%uint64(len(h.buf))]; e.id == id && e.data != nil {
			seq = s - 1
			break
		}
	}
	if seq == h.next {
		return nil, false
	}
	from := seq + 1
	if skew > 0 {
		at := h.buf[seq%uint64(len(h.buf))].at.Add(-skew)
		for from > h.first && !h.buf[(from-1)%uint64(len(h.buf))].at.Before(at) {
			from--
		}
	}
	for s := from; s < h.next; s++ {
		if e := h.buf[s%uint64(len(h.buf))]; s != seq && e.visible(time.Time{}, m) {
			out = append(out, e)
		}
	}
	return out, true
}

// visible reports whether a poll by m for the entries recorded after the
// time after (when set) returns e. It is the one rule of what a poller
// sees, for the node's history and for the cluster's (clusterlink.Link.Poll).
func (e *entry) visible(after time.Time, m *member) bool {
	if e.data == nil {
		return false
	}
	if !after.IsZero() && !e.at.After(after) {
		return false
	}
	return e.owner == nil || e.owner == m
}
