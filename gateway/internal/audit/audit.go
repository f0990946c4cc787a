package audit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mew-protocol/mew/internal/auditfmt"
)

// File names inside [Options.Dir], as the reference gateway names them.
const (
	EnvelopeHistoryFile     = auditfmt.EnvelopeHistory
	CapabilityDecisionsFile = auditfmt.CapabilityDecisions
)

// Envelope events, the values of [EnvelopeRecord.Event].
const (
	Received  = "received"  // an envelope the gateway accepted from a participant
	Delivered = "delivered" // an envelope sent to recipients: one grouped line (compact) or one line each (reference)
	Rejected  = "rejected"  // an inbound envelope refused by capability checks
)

// Layouts of envelope-history.jsonl, the values of [Options.Format].
const (
	// FormatCompact writes each envelope's body once: on its received line,
	// or, for an envelope the gateway sent itself, on its first delivered
	// line. The deliveries of a record are grouped: one delivered line names
	// up to 256 recipients in a "recipients" list.
	FormatCompact = "compact"
	// FormatReference writes the body on every line, as the reference
	// gateway does: one copy per recipient.
	FormatReference = "reference"
)

// DefaultQueueSize is the queue length used when [Options.QueueSize] is not
// positive.
const DefaultQueueSize = 65536

const (
	gitignoreContent = "*\n!.gitignore\n"
	bufferSize       = 64 << 10
	flushInterval    = 200 * time.Millisecond

	// groupWindow is how long the writer, having just written, gathers
	// records before it writes again: under steady traffic it then writes
	// and is woken at most 1/groupWindow times a second instead of once per
	// record, the cost that dominated it. groupFull queued records end the
	// wait early, so a burst is not held back.
	groupWindow = 5 * time.Millisecond
	groupFull   = 1024
	// steadyAfter is how long traffic must have kept the writer busy (no
	// gap between two writes of quietGap or more) before it gathers: a
	// short exchange after a quiet moment (a request, its answer a
	// millisecond later) is written as it comes, so that a script reading
	// the log right after its request finds the answer.
	steadyAfter = 2 * groupWindow
	quietGap    = 2 * groupWindow
)

// Options configure [Open].
type Options struct {
	// Dir is the directory of the two files, created if missing. Required
	// unless both files are switched off.
	Dir string
	// EnvelopeHistory switches envelope-history.jsonl on.
	EnvelopeHistory bool
	// CapabilityDecisions switches capability-decisions.jsonl on.
	CapabilityDecisions bool
	// Format is FormatCompact (also "") or FormatReference.
	Format string
	// ReceivedOnly skips "delivered" records, for large spaces where even the
	// grouped delivered lines are too much; received and rejected lines are
	// kept.
	ReceivedOnly bool
	// QueueSize is how many records may wait for the writer before
	// WaitRoom makes its callers wait (Envelope and Decision never do). Not
	// positive: DefaultQueueSize.
	QueueSize int
	// MaxFileSize is the size in bytes a file may reach before it is
	// rotated: a line that would take it past the limit goes into a new
	// file. 0 means DefaultMaxFileSize; negative never rotates.
	MaxFileSize int64
	// MaxFiles is how many rotated files of each log are kept; older ones
	// are deleted. 0 means DefaultMaxFiles; negative keeps them all.
	MaxFiles int
	// Logger receives write errors (the first at once, then at most one
	// message a minute per file), recoveries, and the first malformed JSON
	// value; nil discards.
	Logger *slog.Logger
	// Now is the Log's clock: it stamps records whose Time is zero, names
	// rotated files, and times the retries and messages of a failing file;
	// nil means time.Now.
	Now func() time.Time

	test *hooks // file system replacements for tests; nil in production
}

// Recipient is one receiver of a delivered envelope.
type Recipient struct {
	ID        string // participant id, written as "participant"
	Transport string // "websocket", "http" or "virtual"
}

// EnvelopeRecord is one envelope event. Its byte slices are shared with the
// caller: the Log only reads them, and forgets them once the record is
// written, so the caller must not modify them after handing them over.
type EnvelopeRecord struct {
	// Time of the event; zero means Options.Now() at the call.
	Time time.Time
	// Event is Received, Delivered or Rejected.
	Event string
	// ID is the envelope id.
	ID string
	// Envelope is the envelope as compact JSON.
	Envelope []byte
	// Participant is the sender (received, rejected). For a delivered record
	// without Recipients it is the one recipient.
	Participant string
	// Recipients of a delivered record: grouped on one line per 256 in the
	// compact format, one line each in the reference format. Ignored for
	// other events.
	Recipients []Recipient
	// Abridged, when set, is what the compact format records in place of
	// Envelope, with AbridgedMeta as its metadata: the envelope without a
	// part that grows with the space (a welcome without its roster). The
	// reference format records Envelope whole, as the reference gateway
	// does.
	Abridged, AbridgedMeta []byte
	// Everyone says that Recipients are every participant connected but
	// the one the envelope is about (a presence): the compact format writes
	// "everyone" and their number instead of the list, so that a join
	// costs the log the same however large the space. The reference format
	// writes a line per recipient as ever.
	Everyone bool
	// Space is the space id, written as "space_id".
	Space string
	// Transport is the sender's transport (received, rejected), or the one
	// recipient's for a delivered record without Recipients.
	Transport string
	// Metadata is an optional compact JSON object; nil means absent.
	Metadata []byte
}

// DecisionRecord is one capability check. Its byte slices are shared with the
// caller as in [EnvelopeRecord].
type DecisionRecord struct {
	// Time of the check; zero means Options.Now() at the call.
	Time time.Time
	// EnvelopeID is the id of the envelope checked.
	EnvelopeID string
	// Participant is the sender whose capabilities were checked.
	Participant string
	// Space is the space id.
	Space string
	// Allowed is the outcome, written as result "allowed" or "denied".
	Allowed bool
	// Kind is the envelope kind, written as "required_capability".
	Kind string
	// Matched is the matching capability pattern as compact JSON, written as
	// "matched_capability"; nil when denied.
	Matched []byte
	// Source is where the match came from, written as "matched_source":
	// "static", "dynamic" or "implicit"; "" omits it.
	Source string
	// Granted is the participant's capabilities as a compact JSON array,
	// written as "granted_capabilities"; nil omits it.
	Granted []byte
	// Metadata is an optional compact JSON object; nil means absent.
	Metadata []byte
}

// Stats counts what a [Log] has done since Open.
type Stats struct {
	Records   uint64 // records the writer has processed
	Lines     uint64 // lines that reached the files (the write system call succeeded)
	Bytes     uint64 // bytes of those lines, newlines included
	Errors    uint64 // failed opens, writes, flushes, renames and deletions, plus JSON values that were not valid
	Dropped   uint64 // records offered after Close, discarded
	Lost      uint64 // lines of processed records not written because writing failed (disk full, ...)
	Rotations uint64 // files rotated
	Writes    uint64 // write system calls that flushed lines to a file
}

type counters struct {
	records, lines, bytes, errors, dropped, lost, rotations, writes atomic.Uint64
}

// Log is an open audit log. Its methods are safe for concurrent use; a nil
// *Log, like one opened with both files switched off, accepts records and
// discards them.
type Log struct {
	envOn, decOn bool // fixed at Open; false for a discarding Log
	receivedOnly bool
	now          func() time.Time
	stats        counters

	// mu guards the queue and the fields below it. notFull (on mu) wakes
	// callers waiting for room; wake (capacity 1) wakes the writer when it
	// is idle, or gathering and the queue has grown to groupFull.
	mu        sync.Mutex
	notFull   sync.Cond
	envs      []EnvelopeRecord
	decs      []DecisionRecord
	queued    int // len(envs) + len(decs)
	max       int
	waiters   int  // callers blocked on notFull (in WaitRoom)
	idle      bool // the writer is waiting on wake
	gathering bool // the writer is waiting for groupWindow to pass, or on wake
	closed    bool
	wake      chan struct{}
	done      chan struct{} // closed by the writer when it has finished
	closeErr  error         // set by the writer before done is closed

	w *writer // owned by the writer goroutine

	// full mirrors queued >= max (written under mu), so that WaitRoom's
	// usual answer, room, costs no lock.
	full atomic.Bool
}

// Open opens the log described by opts and starts its writer goroutine; the
// caller must Close the Log. With both files switched off it returns a Log
// that discards everything and touches no file.
func Open(opts Options) (*Log, error) {
	if !opts.EnvelopeHistory && !opts.CapabilityDecisions {
		return &Log{}, nil
	}
	if opts.Dir == "" {
		return nil, errors.New("audit: Options.Dir is empty")
	}
	if opts.Format != "" && opts.Format != FormatCompact && opts.Format != FormatReference {
		return nil, fmt.Errorf("audit: unknown format %q (want %q or %q)", opts.Format, FormatCompact, FormatReference)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := prepareDir(opts.Dir); err != nil {
		return nil, err
	}
	l := &Log{
		envOn:        opts.EnvelopeHistory,
		decOn:        opts.CapabilityDecisions,
		receivedOnly: opts.ReceivedOnly,
		now:          opts.Now,
		max:          opts.QueueSize,
		wake:         make(chan struct{}, 1),
		done:         make(chan struct{}),
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.max <= 0 {
		l.max = DefaultQueueSize
	}
	l.notFull.L = &l.mu
	w := newWriter(&opts, logger, l.now, &l.stats)
	var err error
	if opts.EnvelopeHistory {
		if w.env, err = w.openSink(filepath.Join(opts.Dir, EnvelopeHistoryFile)); err != nil {
			return nil, err
		}
	}
	if opts.CapabilityDecisions {
		if w.dec, err = w.openSink(filepath.Join(opts.Dir, CapabilityDecisionsFile)); err != nil {
			if w.env != nil {
				_ = w.env.f.Close()
			}
			return nil, err
		}
	}
	l.w = w
	go l.run()
	return l, nil
}

// newWriter returns the writer for opts, with the defaults of the size
// limits filled in.
func newWriter(opts *Options, logger *slog.Logger, now func() time.Time, stats *counters) *writer {
	cfg := sinkConfig{
		maxSize:  opts.MaxFileSize,
		maxFiles: opts.MaxFiles,
		retry:    retryInterval,
		open:     openLogFile,
		rename:   os.Rename,
	}
	switch {
	case cfg.maxSize == 0:
		cfg.maxSize = DefaultMaxFileSize
	case cfg.maxSize < 0:
		cfg.maxSize = 0
	}
	if cfg.maxFiles == 0 {
		cfg.maxFiles = DefaultMaxFiles
	}
	if h := opts.test; h != nil {
		if h.open != nil {
			cfg.open = h.open
		}
		if h.rename != nil {
			cfg.rename = h.rename
		}
		if h.noRetryDelay {
			cfg.retry = 0
		}
	}
	return &writer{log: logger, stats: stats, now: now, cfg: cfg, line: make([]byte, 0, lineBufSize),
		compact: opts.Format != FormatReference}
}

// prepareDir creates dir (0700) with a .gitignore when it does not exist.
func prepareDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil:
		if !fi.IsDir() {
			return fmt.Errorf("audit: %s is not a directory", dir)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("audit: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("audit: create log directory: %w", err)
	}
	// O_EXCL: never overwrite a .gitignore someone wrote meanwhile.
	f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	_, err = f.WriteString(gitignoreContent)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("audit: write .gitignore: %w", err)
	}
	return nil
}

// Envelope queues an envelope event for envelope-history.jsonl. It never
// waits: the queue may grow past Options.QueueSize, and those who make
// records call WaitRoom, holding no lock, before they make more. It discards
// the record when the file is switched off, when r is a delivered record and
// Options.ReceivedOnly is set, or when the Log is closed (counted in
// Stats.Dropped).
func (l *Log) Envelope(r EnvelopeRecord) {
	if l == nil || !l.envOn || (l.receivedOnly && r.Event == Delivered) {
		return
	}
	if r.Time.IsZero() {
		r.Time = l.now()
	}
	if !l.open() {
		return
	}
	l.envs = append(l.envs, r)
	l.commit()
}

// Decision queues a capability check for capability-decisions.jsonl. Like
// Envelope it never waits, and it discards the record when the file is
// switched off or the Log is closed (counted in Stats.Dropped).
func (l *Log) Decision(r DecisionRecord) {
	if l == nil || !l.decOn {
		return
	}
	if r.Time.IsZero() {
		r.Time = l.now()
	}
	if !l.open() {
		return
	}
	l.decs = append(l.decs, r)
	l.commit()
}

// WaitRoom waits while the queue holds Options.QueueSize records or more
// (a disk slower than the traffic), until the writer has taken them, the
// Log is closed or ctx is done, whose error it then returns. A gateway
// calls it before it takes in the next message of a participant, holding
// no lock: back-pressure falls on the senders, and never on delivery, which
// appends records under a space's lock without waiting. The queue can so
// pass its size only by what the messages already taken in produce.
func (l *Log) WaitRoom(ctx context.Context) error {
	if l == nil || !l.full.Load() {
		return nil
	}
	l.mu.Lock()
	if l.queued < l.max || l.closed {
		l.mu.Unlock()
		return nil
	}
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.notFull.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	for l.queued >= l.max && !l.closed && ctx.Err() == nil {
		l.waiters++
		l.notFull.Wait()
		l.waiters--
	}
	l.mu.Unlock()
	return ctx.Err()
}

// open locks mu, or reports false, with mu unlocked, when the Log is
// closed.
func (l *Log) open() bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.stats.dropped.Add(1)
		return false
	}
	return true
}

// commit finishes an append made after open: it counts the record,
// unlocks mu and wakes the writer if it is idle, or if it is gathering and
// the queue is large enough to write now (a full queue always is).
func (l *Log) commit() {
	l.queued++
	if l.queued >= l.max {
		l.full.Store(true)
	}
	wake := l.idle || l.gathering && l.queued >= min(groupFull, l.max)
	if wake {
		l.idle, l.gathering = false, false
	}
	l.mu.Unlock()
	if wake {
		l.signal()
	}
}

func (l *Log) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Close stops accepting records, writes all records accepted so far, flushes
// and closes the files, and stops the writer goroutine. It returns the first
// error of the final flushes and closes (earlier write errors are only in
// Stats). Further calls wait for the first to finish and return its result.
func (l *Log) Close() error {
	if l == nil || l.done == nil {
		return nil
	}
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		if l.waiters > 0 {
			l.notFull.Broadcast()
		}
		if l.idle || l.gathering {
			l.idle, l.gathering = false, false
			l.signal()
		}
	}
	l.mu.Unlock()
	<-l.done
	return l.closeErr
}

// Stats returns the counters. It may be called at any time, also after Close.
func (l *Log) Stats() Stats {
	if l == nil {
		return Stats{}
	}
	return Stats{
		Records:   l.stats.records.Load(),
		Lines:     l.stats.lines.Load(),
		Bytes:     l.stats.bytes.Load(),
		Errors:    l.stats.errors.Load(),
		Dropped:   l.stats.dropped.Load(),
		Lost:      l.stats.lost.Load(),
		Rotations: l.stats.rotations.Load(),
		Writes:    l.stats.writes.Load(),
	}
}

// run is the writer goroutine: it takes the whole queue at a time, writes it,
// and flushes when the queue is empty or flushInterval has passed. Having
// written while traffic is steady (writes for steadyAfter without a
// quietGap), it gathers for groupWindow before it looks at the queue again;
// otherwise, and with nothing written since, it waits until woken.
func (l *Log) run() {
	w := l.w
	var envs []EnvelopeRecord
	var decs []DecisionRecord
	lastFlush := time.Now()
	gather := time.NewTimer(groupWindow)
	gather.Stop()
	defer gather.Stop()
	wrote := false                     // gather before the next look at the queue
	var busySince, lastWrite time.Time // this run of writes without a quietGap
	for {
		l.mu.Lock()
		for l.queued == 0 && !l.closed {
			timed := wrote
			wrote = false
			if timed {
				l.gathering = true
			} else {
				l.idle = true
			}
			l.mu.Unlock()
			w.flush()
			lastFlush = time.Now()
			if timed {
				gather.Reset(groupWindow)
				select {
				case <-gather.C:
				case <-l.wake:
					gather.Stop()
				}
			} else {
				<-l.wake
			}
			l.mu.Lock()
			l.gathering = false // when the window passed unwoken
		}
		if l.queued == 0 { // and closed: nothing more can arrive
			l.mu.Unlock()
			break
		}
		envs, l.envs = l.envs, envs[:0]
		decs, l.decs = l.decs, decs[:0]
		l.queued = 0
		l.full.Store(false)
		if l.waiters > 0 {
			l.notFull.Broadcast()
		}
		l.mu.Unlock()

		n := 0
		for i := range envs {
			w.envelope(&envs[i])
			if n++; n%256 == 0 && time.Since(lastFlush) >= flushInterval {
				w.flush()
				lastFlush = time.Now()
			}
		}
		for i := range decs {
			w.decision(&decs[i])
			if n++; n%256 == 0 && time.Since(lastFlush) >= flushInterval {
				w.flush()
				lastFlush = time.Now()
			}
		}
		l.stats.records.Add(uint64(n))
		now := time.Now()
		if now.Sub(lastWrite) >= quietGap {
			busySince = now
		}
		lastWrite = now
		wrote = now.Sub(busySince) >= steadyAfter
		envs = recycle(envs)
		decs = recycle(decs)
		if time.Since(lastFlush) >= flushInterval {
			w.flush()
			lastFlush = time.Now()
		}
	}
	l.closeErr = w.close()
	close(l.done)
}

// maxSpare is the capacity up to which a queue slice is always kept for
// reuse. A larger one, grown by a burst, is kept only while the batches stay
// large, so that a past burst does not pin its memory.
const maxSpare = 4096

// recycle clears s, dropping its references to the callers' bytes, and returns
// it for the next batch, or nil to let a large idle slice go.
func recycle[T any](s []T) []T {
	if cap(s) > maxSpare && len(s) < cap(s)/8 {
		return nil
	}
	clear(s)
	return s[:0]
}
