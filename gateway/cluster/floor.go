package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// maxClaimRounds bounds the compare-and-swap retries of one floor claim. A
// lost round means another claim was stored meanwhile, or that the read was
// served by a replica that had not seen the latest write (State.Get may lag
// on a replicated fabric): so each lost round waits a little (lostRound)
// before it reads again, or a lagging replica could answer the same stale
// revision to all sixteen rounds within a millisecond.
const maxClaimRounds = 16

// ClaimFloor arbitrates c's claim on the floor of message msg of space with
// every other claim in the cluster, by compare-and-swap on the claim's key:
// the stored claim is replaced only by one that beats it (Claim.Beats) or
// by a repeated claim of its holder (which keeps the earlier start), and a
// claim past its Expires counts as none. It returns the claim holding the
// floor afterwards and, when c displaced an earlier holder, that claim (its
// node tells it to yield when its watch sees the key change). The key
// expires with the winning claim (ttl from now). The winner's Revision is
// its key's, so that a watcher can tell older changes of the key from
// newer ones.
func ClaimFloor(ctx context.Context, st State, space, msg string, c Claim, ttl time.Duration, now time.Time) (winner Claim, displaced *Claim, err error) {
	key := FloorKey(msg)
	c.Expires = now.Add(ttl)
	val, err := Encode(c)
	if err != nil {
		return Claim{}, nil, err
	}
	for round := range maxClaimRounds {
		cur, err := st.Get(ctx, space, key)
		if errors.Is(err, ErrNotFound) {
			rev, err := st.Put(ctx, space, key, val, PutOptions{IfAbsent: true, TTL: ttl})
			if err == nil {
				won := c
				won.Revision = rev
				return won, nil, nil
			}
			if !errors.Is(err, ErrConflict) {
				return Claim{}, nil, err
			}
			if err := lostRound(ctx, round); err != nil {
				return Claim{}, nil, err
			}
			continue
		}
		if err != nil {
			return Claim{}, nil, err
		}
		held, derr := DecodeClaim(cur.Value)
		held.Revision = cur.Revision
		var prev *Claim
		next := c
		switch {
		case derr != nil || !now.Before(held.Expires):
			// An unreadable or expired claim holds nothing.
		case held.Holder == c.Holder:
			next.StartedAt = min(held.StartedAt, c.StartedAt)
			next.ID = held.ID
		case c.Beats(held):
			prev = &held
		default:
			return held, nil, nil
		}
		v := val
		if next != c {
			if v, err = Encode(next); err != nil {
				return Claim{}, nil, err
			}
		}
		rev, err := st.Put(ctx, space, key, v, PutOptions{IfRevision: cur.Revision, TTL: ttl})
		if err == nil {
			next.Revision = rev
			return next, prev, nil
		}
		if !errors.Is(err, ErrConflict) {
			return Claim{}, nil, err
		}
		if err := lostRound(ctx, round); err != nil {
			return Claim{}, nil, err
		}
	}
	return Claim{}, nil, fmt.Errorf("%w: floor of %s still contested after %d rounds", ErrConflict, msg, maxClaimRounds)
}
