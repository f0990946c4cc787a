package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// A Target is something to measure: it starts a server for the given participant ids and says
// how to reach it.
type Target interface {
	// Name names the target in results: "gateway", "relay", "url".
	Name() string
	// Start starts a server that admits the participants ids to one space. The caller closes the
	// returned Endpoint when it is done.
	Start(ctx context.Context, ids []string) (*Endpoint, error)
}

// Endpoint is how to reach a started Target.
type Endpoint struct {
	// URL is what clients dial, e.g. ws://127.0.0.1:PORT/ws?space=bench.
	URL string
	// URLs, when the target is several gateway nodes of one cluster, holds each node's URL
	// (URL is the first): participant i dials URLs[i mod len(URLs)], so the participants are
	// spread round robin and a workload can tell deliveries that crossed nodes.
	URLs []string
	// Tokens maps each participant id to its bearer token.
	Tokens map[string]string
	// Close stops the server; nil for a server the target did not start (URLTarget).
	Close func() error
	// PID is the server's process when the target started it as a child (ChildTarget); CPU time
	// and memory are then read from /proc/PID and are the server's alone. 0 otherwise.
	PID int
	// AuditDir, when set, is the directory the server writes its audit log to, whose growth Idle
	// reports; the server must have the audit log to itself there.
	AuditDir string

	// measure, if set, asks the child for its live heap, stacks and goroutines.
	measure func(context.Context) (processUse, error)
}

// nodes returns how many nodes the participants are spread over: len(URLs), at least 1.
func (e *Endpoint) nodes() int { return max(len(e.URLs), 1) }

// urlOf returns the URL participant i dials.
func (e *Endpoint) urlOf(i int) string {
	if len(e.URLs) == 0 {
		return e.URL
	}
	return e.URLs[i%len(e.URLs)]
}

// inProcess reports whether the endpoint's server runs in this process (the target started it),
// so that process-wide measurements include the server side.
func (e *Endpoint) inProcess() bool { return e.Close != nil && e.PID == 0 }

// cpu returns the CPU time the server side has used: the child's when there is one, else this
// process's (which then includes the clients).
func (e *Endpoint) cpu() (time.Duration, bool) {
	if e.PID != 0 {
		return childCPU(e.PID)
	}
	return processCPU()
}

// stop closes the endpoint's server, if the target started one.
func (e *Endpoint) stop() error {
	if e.Close == nil {
		return nil
	}
	return e.Close()
}

// AnyID is the key of URLTarget.Tokens whose token serves every participant id without a token
// of its own, for servers that accept any participant with one token.
const AnyID = "*"

// URLTarget is a server that is already running, such as a gateway started with `mew space up`.
// Its space must admit the participant ids a workload uses (see the workloads' documentation),
// each with the token Tokens gives it, or with Tokens[AnyID].
type URLTarget struct {
	// URL is the WebSocket URL, including ?space=NAME.
	URL string
	// Tokens maps participant ids to bearer tokens.
	Tokens map[string]string
}

// Name returns "url".
func (URLTarget) Name() string { return "url" }

// Start checks the URL and that every id has a token; it starts nothing.
func (t URLTarget) Start(_ context.Context, ids []string) (*Endpoint, error) {
	u, err := url.Parse(t.URL)
	if err != nil {
		return nil, fmt.Errorf("url target: %w", err)
	}
	if u.Scheme != "ws" && u.Scheme != "wss" || u.Host == "" {
		return nil, fmt.Errorf("url target: %q is not a ws:// or wss:// URL", t.URL)
	}
	tokens := make(map[string]string, len(ids))
	var missing []string
	for _, id := range ids {
		tok, ok := t.Tokens[id]
		if !ok {
			tok, ok = t.Tokens[AnyID]
		}
		if !ok {
			missing = append(missing, id)
			continue
		}
		tokens[id] = tok
	}
	if len(missing) > 0 {
		const show = 5
		more := ""
		if len(missing) > show {
			more = fmt.Sprintf(" and %d more", len(missing)-show)
			missing = missing[:show]
		}
		return nil, fmt.Errorf("url target: no token for participant %s%s (give id=token for each, or %s=token for all)",
			strings.Join(missing, ", "), more, AnyID)
	}
	return &Endpoint{URL: t.URL, Tokens: tokens}, nil
}

// participantIDs returns n ids prefix-0 ... prefix-(n-1).
func participantIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return ids
}

// runNonce returns a short random string that marks one run's envelope ids, so that a run never
// counts another's traffic in a shared space.
func runNonce() string { return strings.ToLower(rand.Text()[:8]) }

// startTarget starts t for ids and checks that the endpoint has a token for each.
func startTarget(ctx context.Context, t Target, ids []string) (*Endpoint, error) {
	if t == nil {
		return nil, errors.New("no target")
	}
	ep, err := t.Start(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", t.Name(), err)
	}
	if ep == nil {
		return nil, fmt.Errorf("start %s: no endpoint", t.Name())
	}
	if i := slices.IndexFunc(ids, func(id string) bool { _, ok := ep.Tokens[id]; return !ok }); i >= 0 {
		return nil, errors.Join(fmt.Errorf("start %s: no token for %s", t.Name(), ids[i]), ep.stop())
	}
	return ep, nil
}
