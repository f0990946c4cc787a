package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Limits and defaults.
const (
	// MaxBody bounds a message's body; a larger one goes to the dead-letter
	// log at once.
	MaxBody = 64 << 10
	// maxResponse bounds what is read of an answer: a receiver that
	// answers without end costs one read of this much.
	maxResponse = 64 << 10
	// maxDeadFile is the size past which the dead-letter log is rotated.
	maxDeadFile = 16 << 20
	// maxRefused bounds the refused messages waiting for the loop to
	// write them to the dead-letter log.
	maxRefused = 256
	// maxSpoolLine bounds a line of the spool read back.
	maxSpoolLine = 2 * MaxBody

	defaultQueueSize  = 1024
	defaultWorkers    = 4
	defaultTimeout    = 10 * time.Second
	defaultAttempts   = 8
	defaultBackoff    = 2 * time.Second
	defaultMaxBackoff = 10 * time.Minute
)

// Header names of an attempt.
const (
	HeaderDelivery  = "X-Mew-Delivery"
	HeaderAttempt   = "X-Mew-Attempt"
	HeaderTimestamp = "X-Mew-Timestamp"
	HeaderSignature = "X-Mew-Signature"
)

// Message is one notification.
type Message struct {
	// ID names the message on every attempt (X-Mew-Delivery), so that a
	// receiver can tell a retry of what it already took.
	ID string `json:"id"`
	// Recipient and Subject are whom the message is for and what it is
	// about (a participant and a proposal): Config.Link mints the link
	// from them.
	Recipient string `json:"recipient"`
	Subject   string `json:"subject"`
	// LinkTTL is how long the link may wait for its use.
	LinkTTL time.Duration `json:"link_ttl"`
	// Body is a JSON object. The notifier adds "link" and
	// "link_expires_at" to it when Config.Link gives a link.
	Body json.RawMessage `json:"body"`
	// Created is when the message was enqueued.
	Created time.Time `json:"created"`
}

// Config configures a Notifier. URL, Secret, Dir and Name are required.
type Config struct {
	URL    string
	Secret []byte
	// Dir holds the spool and the dead-letter log, named after Name.
	Dir, Name string
	// Timeout bounds one attempt (default 10 s). MaxAttempts is how many
	// attempts a message gets (default 8). Backoff is the wait before the
	// first retry (default 2 s), doubled after each, at most MaxBackoff
	// (default 10 min).
	Timeout     time.Duration
	MaxAttempts int
	Backoff     time.Duration
	MaxBackoff  time.Duration
	// QueueSize bounds the pending messages (default 1024); Workers is how
	// many attempts are made at once (default 4).
	QueueSize int
	Workers   int
	// Link mints a message's one-time link at its first attempt in this
	// process; "" for none. An error leaves the message without a link.
	// It is called from a worker goroutine, with no lock of the notifier
	// held.
	Link func(m *Message) (link string, expires time.Time, err error)
	// Logger receives diagnostics; nil discards them. The secret never
	// reaches it, nor the URL's path and query (which often hold a chat
	// tool's own secret): only its scheme and host.
	Logger *slog.Logger
	// Now returns the time; nil is time.Now.
	Now func() time.Time
	// Transport, when set, makes the requests (tests); nil is a transport
	// of the notifier's own.
	Transport http.RoundTripper
}

// Stats counts what a notifier did.
type Stats struct {
	Pending   int64 // messages waiting for delivery
	Delivered int64 // messages delivered
	Retries   int64 // failed attempts followed by another
	Dead      int64 // messages written to the dead-letter log, the refused ones among them
	Refused   int64 // messages refused for a full queue, a body too large or a closed notifier
}

// entry is a pending message as the loop sees it.
type entry struct {
	msg      *Message
	attempts int
	next     time.Time
	inFlight bool
	lastErr  string
	link     string // minted at the first attempt in this process
	linkExp  time.Time
}

// result is what a worker reports of one attempt.
type result struct {
	e         *entry
	err       error
	final     bool          // no retry will do better
	wait      time.Duration // Retry-After, when the receiver said
	cancelled bool          // the notifier is closing: the attempt does not count
}

// Notifier delivers one space's messages. Its methods are safe for
// concurrent use.
type Notifier struct {
	cfg    Config
	log    *slog.Logger
	client *http.Client
	tr     *http.Transport // nil when Config.Transport was given
	target string          // the URL's scheme and host, for logs

	// mu guards the hand-over from Enqueue to the loop; a leaf lock, held
	// for a few appends.
	mu       sync.Mutex
	incoming []*Message
	refused  []*refusedMsg // to the dead-letter log
	closed   bool

	wake    chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	workers sync.WaitGroup
	work    chan *entry
	results chan result

	pending, delivered, retries, dead, refusedN atomic.Int64

	// The loop's own:
	entries []*entry
	spool   *os.File
	lines   int // lines in the spool
}

type refusedMsg struct {
	msg *Message
	why string
}

// New opens the spool in cfg.Dir, reads back what it holds, and starts
// the loop and the workers.
func New(cfg Config) (*Notifier, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("notify: want an http or https URL")
	}
	if len(cfg.Secret) == 0 || cfg.Dir == "" || cfg.Name == "" {
		return nil, fmt.Errorf("notify: the secret, directory and name are required")
	}
	setDefault(&cfg.QueueSize, defaultQueueSize)
	setDefault(&cfg.Workers, defaultWorkers)
	setDefault(&cfg.Timeout, defaultTimeout)
	setDefault(&cfg.MaxAttempts, defaultAttempts)
	setDefault(&cfg.Backoff, defaultBackoff)
	setDefault(&cfg.MaxBackoff, defaultMaxBackoff)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	n := &Notifier{cfg: cfg, log: cfg.Logger, target: u.Scheme + "://" + u.Host, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	rt := cfg.Transport
	if rt == nil {
		n.tr = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   cfg.Timeout,
			ResponseHeaderTimeout: cfg.Timeout,
			MaxIdleConns:          cfg.Workers,
			IdleConnTimeout:       90 * time.Second,
		}
		rt = n.tr
	}
	n.client = &http.Client{
		Transport: rt,
		Timeout:   cfg.Timeout,
		// A redirect is an answer of its own: following it would send the
		// signed body somewhere the configuration does not name.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	if err := n.load(); err != nil {
		return nil, err
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.work = make(chan *entry, cfg.Workers)
	n.results = make(chan result, cfg.Workers)
	for range cfg.Workers {
		n.workers.Add(1)
		go n.worker()
	}
	go n.loop()
	return n, nil
}

func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

func (n *Notifier) spoolPath() string { return filepath.Join(n.cfg.Dir, n.cfg.Name+".spool.jsonl") }
func (n *Notifier) deadPath() string  { return filepath.Join(n.cfg.Dir, n.cfg.Name+".dead.jsonl") }

// Enqueue takes m for delivery, or, when the queue is full, the body too
// large or the notifier closed, refuses it (false) and has it written to the
// dead-letter log. It never blocks on anything but a short leaf lock: it
// is called under a space's lock.
func (n *Notifier) Enqueue(m *Message) bool {
	why := ""
	switch {
	case len(m.Body) > MaxBody:
		why = fmt.Sprintf("the body is %d bytes: at most %d", len(m.Body), MaxBody)
	case !json.Valid(m.Body):
		why = "the body is not JSON"
	case n.pending.Add(1) > int64(n.cfg.QueueSize):
		n.pending.Add(-1)
		why = fmt.Sprintf("the queue is full (%d pending)", n.cfg.QueueSize)
	}
	n.mu.Lock()
	switch {
	case n.closed:
		if why == "" {
			n.pending.Add(-1)
		}
		n.mu.Unlock()
		n.refusedN.Add(1)
		n.log.Warn("webhook notification refused: the notifier is closed", "id", m.ID)
		return false
	case why != "":
		// Bounded: past it, until the loop has written them, only counted
		// and logged.
		if len(n.refused) < maxRefused {
			n.refused = append(n.refused, &refusedMsg{m, why})
		}
	default:
		n.incoming = append(n.incoming, m)
	}
	n.mu.Unlock()
	if why != "" {
		n.refusedN.Add(1)
		n.log.Warn("webhook notification refused", "id", m.ID, "why", why)
	}
	select {
	case n.wake <- struct{}{}:
	default:
	}
	return why == ""
}

// Stats returns what the notifier did so far.
func (n *Notifier) Stats() Stats {
	return Stats{Pending: n.pending.Load(), Delivered: n.delivered.Load(), Retries: n.retries.Load(), Dead: n.dead.Load(), Refused: n.refusedN.Load()}
}

// Close stops the loop and the workers. Messages still pending stay in the
// spool for the next notifier on the same directory. It may be called more
// than once.
func (n *Notifier) Close() error {
	n.mu.Lock()
	already := n.closed
	n.closed = true
	n.mu.Unlock()
	if !already {
		n.cancel()
	}
	<-n.done
	return nil
}

// loop owns the entries, the schedule and the files.
func (n *Notifier) loop() {
	defer close(n.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	free := n.cfg.Workers
	for {
		n.takeIncoming()
		now := n.cfg.Now()
		var wakeAt time.Time
		for _, e := range n.entries {
			if e.inFlight {
				continue
			}
			if !e.next.After(now) && free > 0 {
				e.inFlight = true
				free--
				n.work <- e // buffered for every worker: never waits
				continue
			}
			if wakeAt.IsZero() || e.next.Before(wakeAt) {
				wakeAt = e.next
			}
		}
		wait := time.Hour
		if !wakeAt.IsZero() {
			wait = max(wakeAt.Sub(now), time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-n.ctx.Done():
			n.shutdown()
			return
		case <-n.wake:
		case <-timer.C:
		case r := <-n.results:
			free++
			n.settle(r)
		}
	}
}

// shutdown stops the workers and spools what came in meanwhile.
func (n *Notifier) shutdown() {
	close(n.work)
	n.workers.Wait()
	for drained := false; !drained; {
		select {
		case r := <-n.results:
			n.settle(r)
		default:
			drained = true
		}
	}
	n.takeIncoming()
	if n.spool != nil {
		if err := n.spool.Close(); err != nil {
			n.log.Warn("webhook spool close", "err", err)
		}
	}
	if n.tr != nil {
		n.tr.CloseIdleConnections()
	}
}

// takeIncoming spools what Enqueue took and dead-letters what it refused.
func (n *Notifier) takeIncoming() {
	n.mu.Lock()
	in, refused := n.incoming, n.refused
	n.incoming, n.refused = nil, nil
	n.mu.Unlock()
	for _, r := range refused {
		n.deadLetter(r.msg, 0, r.why)
	}
	if len(in) == 0 {
		return
	}
	now := n.cfg.Now()
	lines := make([]any, 0, len(in))
	for _, m := range in {
		n.entries = append(n.entries, &entry{msg: m, next: now})
		lines = append(lines, spoolLine{Op: opAdd, Message: m})
	}
	n.appendSpool(lines...)
}

// settle records the outcome of an attempt.
func (n *Notifier) settle(r result) {
	e := r.e
	e.inFlight = false
	if r.cancelled {
		return
	}
	e.attempts++
	switch {
	case r.err == nil:
		n.delivered.Add(1)
		n.log.Info("webhook notification delivered", "id", e.msg.ID, "to", n.target, "attempts", e.attempts)
		n.finish(e)
	case r.final || e.attempts >= n.cfg.MaxAttempts:
		n.log.Warn("webhook notification given up", "id", e.msg.ID, "to", n.target, "attempts", e.attempts, "err", r.err)
		n.deadLetter(e.msg, e.attempts, r.err.Error())
		n.finish(e)
	default:
		n.retries.Add(1)
		d := n.backoff(e.attempts)
		if r.wait > d {
			d = min(r.wait, n.cfg.MaxBackoff)
		}
		e.next = n.cfg.Now().Add(d)
		e.lastErr = r.err.Error()
		n.log.Info("webhook notification will be retried", "id", e.msg.ID, "to", n.target, "attempts", e.attempts, "in", d, "err", r.err)
		n.appendSpool(spoolLine{Op: opTry, ID: e.msg.ID, Attempts: e.attempts})
	}
}

// backoff is the wait after the given number of failed attempts: Backoff
// doubled for each attempt after the first, at most MaxBackoff, less up to
// half of it at random.
func (n *Notifier) backoff(attempts int) time.Duration {
	d := n.cfg.Backoff
	for i := 1; i < attempts && d < n.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, n.cfg.MaxBackoff)
	return d - time.Duration(rand.Int64N(int64(d/2)+1))
}

// finish removes a delivered or dead-lettered entry.
func (n *Notifier) finish(e *entry) {
	for i, x := range n.entries {
		if x == e {
			n.entries = append(n.entries[:i], n.entries[i+1:]...)
			break
		}
	}
	n.pending.Add(-1)
	n.appendSpool(spoolLine{Op: opDone, ID: e.msg.ID})
	n.compact()
}

// worker makes the attempts the loop hands it.
func (n *Notifier) worker() {
	defer n.workers.Done()
	for e := range n.work {
		n.results <- n.attempt(e) // buffered for every worker: never waits
	}
}

// attempt posts e's message once.
func (n *Notifier) attempt(e *entry) result {
	if n.ctx.Err() != nil {
		return result{e: e, cancelled: true}
	}
	if e.link == "" && n.cfg.Link != nil {
		link, exp, err := n.cfg.Link(e.msg)
		if err != nil {
			n.log.Warn("webhook notification sent without a link", "id", e.msg.ID, "err", err)
		}
		e.link, e.linkExp = link, exp
	}
	body := withLink(e.msg.Body, e.link, e.linkExp)
	ts := strconv.FormatInt(n.cfg.Now().Unix(), 10)
	req, err := http.NewRequestWithContext(n.ctx, http.MethodPost, n.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return result{e: e, err: fmt.Errorf("request: %w", err), final: true}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "mew-gateway")
	req.Header.Set(HeaderDelivery, e.msg.ID)
	req.Header.Set(HeaderAttempt, strconv.Itoa(e.attempts+1))
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, Sign(n.cfg.Secret, ts, body))
	resp, err := n.client.Do(req)
	if err != nil {
		if n.ctx.Err() != nil {
			return result{e: e, cancelled: true}
		}
		return result{e: e, err: redact(err)}
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	_ = resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return result{e: e}
	}
	err = fmt.Errorf("answered %s: %q", resp.Status, printable(snippet))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return result{e: e, err: err, wait: retryAfter(resp.Header.Get("Retry-After"))}
	default:
		return result{e: e, err: err, final: true}
	}
}

// Sign is the signature header of body sent at the timestamp ts (Unix
// seconds): "v1=" and the hex HMAC-SHA256 of ts, ".", body.
func Sign(secret []byte, ts string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// withLink adds the link fields to a JSON object.
func withLink(body json.RawMessage, link string, exp time.Time) []byte {
	body = bytes.TrimSpace(body)
	if link == "" || len(body) < 2 || body[len(body)-1] != '}' {
		return body
	}
	l, _ := json.Marshal(link) // a string always marshals
	out := make([]byte, 0, len(body)+len(l)+64)
	out = append(out, body[:len(body)-1]...)
	if len(bytes.TrimSpace(body[1:len(body)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"link":`...)
	out = append(out, l...)
	out = append(out, `,"link_expires_at":"`...)
	out = append(out, exp.UTC().Format("2006-01-02T15:04:05.000Z")...)
	out = append(out, `"}`...)
	return out
}

// retryAfter reads a Retry-After header in seconds (a date is ignored).
func retryAfter(h string) time.Duration {
	s, err := strconv.Atoi(h)
	if err != nil || s <= 0 {
		return 0
	}
	return time.Duration(min(s, 86400)) * time.Second
}

// redact drops the URL from a client error: its path and query may hold a
// chat tool's secret.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// printable keeps an answer's excerpt to printable ASCII.
func printable(b []byte) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c >= 0x20 && c < 0x7f {
			out = append(out, c)
		} else {
			out = append(out, '?')
		}
	}
	return string(out)
}
