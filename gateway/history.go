package gateway

import (
	"slices"
	"time"
)

// history keeps a space's most recent envelopes for HTTP polling. It is
// guarded by its space's mu.
type history struct {
	buf  []entry
	next uint64 // sequence number of the next entry; entry i lives at buf[i % len]
}

type entry struct {
	seq  uint64
	at   time.Time
	data []byte
	to   []string // nil: visible to everyone; else only to these runtime ids
}

func newHistory(size int) *history { return &history{buf: make([]entry, size)} }

func (h *history) add(at time.Time, data []byte, to []string) {
	h.buf[h.next%uint64(len(h.buf))] = entry{seq: h.next, at: at, data: data, to: to}
	h.next++
}

// since returns up to limit entries visible to one of ids, recorded after
// the time after (when set) and with a sequence number ≥ from.
func (h *history) since(after time.Time, from uint64, limit int, ids ...string) []entry {
	first := uint64(0)
	if n := uint64(len(h.buf)); h.next > n {
		first = h.next - n
	}
	first = max(first, from)
	var out []entry
	for seq := first; seq < h.next && len(out) < limit; seq++ {
		e := h.buf[seq%uint64(len(h.buf))]
		if !after.IsZero() && !e.at.After(after) {
			continue
		}
		if e.to != nil && !slices.ContainsFunc(ids, func(id string) bool { return slices.Contains(e.to, id) }) {
			continue
		}
		out = append(out, e)
	}
	return out
}
