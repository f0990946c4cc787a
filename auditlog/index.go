package auditlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mew-protocol/mew/protocol"
)

// Entry is one envelope as the log knows it: the line that holds its body,
// who it was delivered to, and the capability checks of its sender.
type Entry struct {
	Record     *Record            // its received or rejected line, or the first line of a gateway's own envelope
	Env        *protocol.Envelope // the decoded body
	Recipients []string           // the participants it was delivered to, in order
	Decisions  []*Record          // capability checks of this envelope

	seq int // its place in Index.order
}

// Rejected reports whether the gateway refused the envelope.
func (e *Entry) Rejected() bool { return e.Record.Event == Rejected }

// Grant is a runtime grant as the log tells it.
type Grant struct {
	ID       string
	Entry    *Entry    // the capability/grant envelope; nil when not in the log
	By, To   string    // granter and recipient
	Patterns []*Record // one decision line per pattern granted, with what covered it
	// ExpiresAt is when the grant ends by itself (ttl_seconds or
	// expires_at); zero: until revoked.
	ExpiresAt time.Time
	Expired   *Record // the gateway's expiry line, when it expired
	Revoked   []*Entry
}

// Index holds a log's envelopes and decisions for lineage questions.
type Index struct {
	byID    map[string][]*Entry
	order   []*Entry
	replies map[string][]*Entry // by the ids their correlation_id names
	context map[string][]*Entry // by their context
	grants  map[string]*Grant
	last    time.Time // the latest record's time
	space   string    // IndexOptions.Space
	budget  int64     // IndexOptions.MaxBytes, or its default
	held    int64     // bytes of the bodies held
	// Envelopes and Decisions are what the scans of the two logs read.
	Envelopes, Decisions ScanStats
}

// IndexOptions configure [BuildIndex].
type IndexOptions struct {
	ReadOptions
	// Space keeps only the records of one space; "" keeps all.
	Space string
	// MaxBytes bounds the envelope bodies held; a log holding more gives
	// ErrTooLarge. Not positive: DefaultIndexBytes.
	MaxBytes int64
}

// DefaultIndexBytes is the body budget when IndexOptions.MaxBytes is not
// positive.
const DefaultIndexBytes = 512 << 20

// ErrTooLarge is returned by BuildIndex for a log whose bodies exceed the
// budget.
var ErrTooLarge = errors.New("the audit log is larger than the index budget")

// BuildIndex reads both logs of dir into an Index.
func BuildIndex(ctx context.Context, dir string, opts IndexOptions) (*Index, error) {
	return BuildIndexDirs(ctx, []string{dir}, opts)
}

func newIndex(opts IndexOptions) *Index {
	budget := opts.MaxBytes
	if budget <= 0 {
		budget = DefaultIndexBytes
	}
	return &Index{byID: map[string][]*Entry{}, replies: map[string][]*Entry{}, context: map[string][]*Entry{}, grants: map[string]*Grant{},
		space: opts.Space, budget: budget}
}

// addEnvelope adds a record of the envelope history, and returns the entry
// it made, if any.
func (ix *Index) addEnvelope(r *Record) (*Entry, error) {
	if ix.space != "" && r.Space != ix.space {
		return nil, nil
	}
	ix.last = maxTime(ix.last, r.Time)
	if r.Event == Delivered && !r.Origin {
		if es := ix.byID[r.ID]; len(es) > 0 {
			e := es[len(es)-1]
			e.Recipients = append(e.Recipients, r.Participant)
		}
		return nil, nil
	}
	env := r.Decoded()
	if env == nil {
		return nil, nil // a rejected line without a body (not decodable)
	}
	if ix.held += int64(len(r.Envelope)); ix.held > ix.budget {
		return nil, fmt.Errorf("%w (%d bytes of bodies)", ErrTooLarge, ix.budget)
	}
	e := &Entry{Record: r, Env: env, seq: len(ix.order)}
	if r.Origin {
		e.Recipients = []string{r.Participant}
	}
	ix.byID[r.ID] = append(ix.byID[r.ID], e)
	ix.order = append(ix.order, e)
	for _, c := range env.CorrelationID {
		ix.replies[c] = append(ix.replies[c], e)
	}
	if env.Context != "" {
		ix.context[env.Context] = append(ix.context[env.Context], e)
	}
	if env.Kind == protocol.KindCapabilityGrant && r.Event == Received {
		ix.grantEnvelope(e)
	}
	if env.Kind == protocol.KindCapabilityRevoke && r.Event == Received {
		var p protocol.Revoke
		if env.DecodePayload(&p) == nil && p.GrantID != "" {
			g := ix.grant(p.GrantID)
			g.Revoked = append(g.Revoked, e)
		}
	}
	return e, nil
}

// addDecision adds a record of the capability decisions, and reports
// whether it is a capability check of an envelope (not of a grant or an
// expiry).
func (ix *Index) addDecision(r *Record) (check bool) {
	if ix.space != "" && r.Space != ix.space {
		return false
	}
	ix.last = maxTime(ix.last, r.Time)
	switch r.Meta("source") {
	case "capability/grant":
		g := ix.grant(r.ID)
		g.Patterns = append(g.Patterns, r)
		g.By, g.To = r.Meta("granted_by"), r.Participant
		return false
	case "expiry":
		g := ix.grant(r.Meta("grant_id"))
		g.Expired = r
		return false
	}
	ix.attach(r)
	return true
}

// attach adds check r to the envelope it is about, if the index holds it.
func (ix *Index) attach(r *Record) {
	if e := ix.sentBy(r.ID, r.Participant, r.Time); e != nil {
		e.Decisions = append(e.Decisions, r)
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (ix *Index) grant(id string) *Grant {
	g := ix.grants[id]
	if g == nil {
		g = &Grant{ID: id}
		ix.grants[id] = g
	}
	return g
}

// grantEnvelope records a capability/grant's sender, recipient and end.
func (ix *Index) grantEnvelope(e *Entry) {
	g := ix.grant(e.Env.ID)
	g.Entry = e
	// A grant's decision lines name its granter; BuildIndex reads them
	// after every envelope, and a Follower may have read them before this
	// one: they win either way.
	if len(g.Patterns) == 0 {
		g.By = e.Env.From
	}
	var p protocol.Grant
	if e.Env.DecodePayload(&p) != nil {
		return
	}
	if g.To == "" && len(g.Patterns) == 0 {
		g.To = p.Recipient
	}
	switch {
	case p.TTLSeconds > 0:
		g.ExpiresAt = e.Record.Time.Add(time.Duration(p.TTLSeconds) * time.Second)
	case p.ExpiresAt != "":
		g.ExpiresAt, _ = time.Parse(time.RFC3339Nano, p.ExpiresAt)
	}
}

// sentBy finds the envelope id sent by participant that a decision at time
// at is about: the latest one at or before at, else the first.
func (ix *Index) sentBy(id, participant string, at time.Time) *Entry {
	var found *Entry
	for _, e := range ix.byID[id] {
		if e.Env.From != participant && e.Record.Participant != participant {
			continue
		}
		if found == nil || !e.Record.Time.After(at) {
			found = e
		}
	}
	return found
}

// Lookup returns the envelope with id: the last one logged under it.
func (ix *Index) Lookup(id string) *Entry {
	es := ix.byID[id]
	if len(es) == 0 {
		return nil
	}
	return es[len(es)-1]
}

// before returns the envelope id as it was at time at: the latest logged
// at or before it, else the first.
func (ix *Index) before(id string, at time.Time) *Entry {
	var found *Entry
	for _, e := range ix.byID[id] {
		if found == nil || !e.Record.Time.After(at) {
			found = e
		}
	}
	return found
}

// Entries returns the envelopes in the order they were logged.
func (ix *Index) Entries() []*Entry { return slices.Clip(ix.order) }

// GrantOf returns what the log tells of grant id, or nil.
func (ix *Index) GrantOf(id string) *Grant { return ix.grants[id] }
