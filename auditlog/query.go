package auditlog

import (
	"bytes"
	"slices"
	"strings"
	"time"
)

// Query selects records; its zero value selects every record. The fields
// that are set must all match.
type Query struct {
	// Participant matches the record's participant (the sender of a
	// received, rejected or checked envelope, the recipient of a delivered
	// one) or the envelope's from or to.
	Participant string
	// Kind matches the envelope's kind, or the kind a decision checked. A
	// trailing "*" matches a prefix: "mcp/*".
	Kind string
	// Since and Until bound the record's time, Since included, Until not;
	// zero means unbounded.
	Since, Until time.Time
	// ID matches the envelope id.
	ID string
	// Correlation matches an envelope whose correlation_id names it, or
	// whose context is it.
	Correlation string
	// Text matches when the envelope's body or the record's metadata holds
	// it, ignoring case.
	Text string
	// Events limits the events; empty means all.
	Events []string
	// Space matches the space id.
	Space string
}

// Match reports whether r is selected.
func (q *Query) Match(r *Record) bool {
	switch {
	case len(q.Events) > 0 && !slices.Contains(q.Events, r.Event):
		return false
	case q.Space != "" && r.Space != q.Space:
		return false
	case q.ID != "" && r.ID != q.ID:
		return false
	case !q.Since.IsZero() && r.Time.Before(q.Since):
		return false
	case !q.Until.IsZero() && !r.Time.Before(q.Until):
		return false
	case q.Kind != "" && !kindMatches(q.Kind, r.Kind()):
		return false
	case q.Participant != "" && !q.involves(r):
		return false
	case q.Correlation != "" && !q.correlates(r):
		return false
	case q.Text != "" && !containsFold(r.Envelope, q.Text) && !containsFold(r.Metadata, q.Text):
		return false
	}
	return true
}

func kindMatches(pattern, kind string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(kind, prefix)
	}
	return pattern == kind
}

func (q *Query) involves(r *Record) bool {
	if r.Participant == q.Participant {
		return true
	}
	e := r.Decoded()
	return e != nil && (e.From == q.Participant || slices.Contains(e.To, q.Participant))
}

func (q *Query) correlates(r *Record) bool {
	e := r.Decoded()
	return e != nil && (slices.Contains(e.CorrelationID, q.Correlation) || e.Context == q.Correlation)
}

// containsFold reports whether b holds s, ignoring case (ASCII and
// Unicode simple folding, as bytes.EqualFold does).
func containsFold(b []byte, s string) bool {
	if len(b) == 0 {
		return false
	}
	return bytes.Contains(bytes.ToLower(b), bytes.ToLower([]byte(s)))
}
