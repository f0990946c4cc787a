package audit

import "hash/maphash"

// maxBodies is how many envelopes the compact format remembers as written.
// A delivered record normally follows its received record within a few
// records; one that comes later than this only costs its body written again.
const maxBodies = 4096

// bodies remembers the envelopes whose body the compact format has written
// recently, by id and a hash of the bytes, so that a delivered record whose
// body is already in the log is written without it. Comparing the bytes, not
// only the id, keeps a body that differs from the one written under the same
// id (a gateway answer reusing an id, a redacted copy) in the log. Owned by
// the writer goroutine.
type bodies struct {
	seed maphash.Seed
	m    map[string]bodyEntry
	ring []string // ids in the order added; ring[next] is the oldest when full
	next int
	seq  uint64
}

type bodyEntry struct {
	sum uint64
	seq uint64 // which addition this is, so that an evicted older entry of a reused id leaves the newer one
}

// add records that the body of id has been written.
func (b *bodies) add(id string, body []byte) {
	if b.m == nil {
		b.seed = maphash.MakeSeed()
		b.m = make(map[string]bodyEntry, maxBodies)
		b.ring = make([]string, 0, maxBodies)
	}
	b.seq++
	if len(b.ring) < maxBodies {
		b.ring = append(b.ring, id)
	} else {
		old := b.ring[b.next]
		if e, ok := b.m[old]; ok && e.seq == b.seq-uint64(maxBodies) {
			delete(b.m, old)
		}
		b.ring[b.next] = id
		b.next = (b.next + 1) % maxBodies
	}
	b.m[id] = bodyEntry{sum: maphash.Bytes(b.seed, body), seq: b.seq}
}

// has reports whether body was the last body written under id.
func (b *bodies) has(id string, body []byte) bool {
	e, ok := b.m[id]
	return ok && e.sum == maphash.Bytes(b.seed, body)
}

// reset forgets every body, after lines were lost.
func (b *bodies) reset() {
	clear(b.m)
	clear(b.ring)
	b.ring = b.ring[:0]
	b.next = 0
}
