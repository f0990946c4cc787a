package clusterlink

import "github.com/mew-protocol/mew/gateway/cluster"

// MaxOrphans bounds the changes kept for what is not known yet, so that
// garbage in State cannot grow a node's memory without limit.
const MaxOrphans = 4096

// Orphans keeps the changes of State that name something not known here
// yet, by what they wait for: a grant or control of a participant whose
// invitation a watch's snapshot brings later, an approval of a proposal
// whose record comes later. Only the last change of each key is kept (it
// is what counts), and at most MaxOrphans in all. Guarded by its owner's
// lock.
type Orphans struct {
	m map[string][]cluster.Entry
	n int
}

// Keep keeps e until who is known; it reports false when e was dropped
// because MaxOrphans are kept.
func (o *Orphans) Keep(who string, e cluster.Entry) bool {
	list := o.m[who]
	for i, k := range list {
		if k.Key == e.Key {
			list[i] = e
			return true
		}
	}
	if o.n >= MaxOrphans {
		return false
	}
	if o.m == nil {
		o.m = make(map[string][]cluster.Entry)
	}
	o.m[who] = append(list, e)
	o.n++
	return true
}

// Take returns the changes kept for who, in the order first kept, and
// forgets them.
func (o *Orphans) Take(who string) []cluster.Entry {
	list := o.m[who]
	delete(o.m, who)
	o.n -= len(list)
	return list
}
