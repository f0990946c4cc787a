package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The gateway's headers (docs/approvals.md, "Webhook").
const (
	headerDelivery  = "X-Mew-Delivery"
	headerTimestamp = "X-Mew-Timestamp"
	headerSignature = "X-Mew-Signature"
)

// maxAge is how far a request's timestamp may be from the receiver's
// clock: a request recorded and sent again later is refused.
const maxAge = 5 * time.Minute

// maxSeen bounds the signatures remembered against replays within maxAge;
// past it, requests are refused until old ones expire, rather than
// forgetting one that could then be replayed.
const maxSeen = 100000

// Errors of Verify.
var (
	errNoSignature = errors.New("no signature")
	errStale       = errors.New("the timestamp is more than 5 minutes from now")
	errBadSig      = errors.New("the signature does not match")
	errReplay      = errors.New("this request was received already")
	errBusy        = errors.New("too many requests to remember")
)

// verifier checks the gateway's signature on a request and refuses
// replays. Its methods are safe for concurrent use.
type verifier struct {
	secret []byte
	now    func() time.Time

	mu   sync.Mutex
	seen map[string]time.Time // signature → when its timestamp stops being accepted
}

func newVerifier(secret []byte) *verifier {
	return &verifier{secret: secret, now: time.Now, seen: map[string]time.Time{}}
}

// verify checks that body was signed by the holder of the secret at the
// timestamp the headers carry, within maxAge of now, and that this exact
// request was not taken before. Taking it is the caller's to say, once it
// has handled it (taken): a request answered with an error may come
// again, signed alike when the gateway retries within the same second.
func (v *verifier) verify(h http.Header, body []byte) (taken func(), err error) {
	ts, sig := h.Get(headerTimestamp), h.Get(headerSignature)
	if ts == "" || sig == "" {
		return nil, errNoSignature
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("timestamp %.20q: %w", ts, errStale)
	}
	now := v.now()
	at := time.Unix(sec, 0)
	if now.Sub(at) > maxAge || at.Sub(now) > maxAge {
		return nil, errStale
	}
	want := expected(v.secret, ts, body)
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return nil, errBadSig
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.seen) >= 1024 { // sweep now and then, not on every request
		for s, until := range v.seen {
			if now.After(until) {
				delete(v.seen, s)
			}
		}
	}
	if _, dup := v.seen[want]; dup {
		return nil, errReplay
	}
	if len(v.seen) >= maxSeen {
		return nil, errBusy
	}
	return func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.seen[want] = at.Add(maxAge)
	}, nil
}

// expected is the signature header the gateway sends for body at ts:
// "v1=" and the hex HMAC-SHA256 of ts + "." + body.
func expected(secret []byte, ts string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}
