package clusterhist

import "encoding/json"

// Page makes one poll's answer from the two histories a node of a cluster
// has: pub, the cluster's records after c.Log that Read returned (scanned:
// how far it read), and priv, this node's private answers for the poller
// from c.Priv on, each in its own order (privNext: the sequence number
// after the node's last private answer). It takes up to limit of them by
// time, and returns them with the cursor of the next poll, marked hash
// (this node's Writer.Hash): each part of it moves past what was taken of
// its own, so that nothing is returned twice or skipped, whichever node
// the next poll goes to.
func Page(c Cursor, hash string, pub []Entry, scanned uint64, priv []Entry, privNext uint64, limit int) ([]json.RawMessage, Cursor) {
	out := make([]json.RawMessage, 0, max(min(limit, len(pub)+len(priv)), 0))
	i, j := 0, 0
	for len(out) < limit && (i < len(pub) || j < len(priv)) {
		if j == len(priv) || (i < len(pub) && !priv[j].At.Before(pub[i].At)) {
			out = append(out, pub[i].Data)
			i++
		} else {
			out = append(out, priv[j].Data)
			j++
		}
	}
	next := Cursor{Log: c.Log, Priv: c.Priv, Hash: hash}
	switch {
	case i == len(pub):
		next.Log = scanned
	case i > 0:
		next.Log = pub[i-1].Seq
	}
	switch {
	case j == len(priv) && len(priv) < limit:
		next.Priv = privNext // every visible one up to the end was taken (as on one node)
	case j > 0:
		next.Priv = priv[j-1].Seq + 1
	}
	return out, next
}
