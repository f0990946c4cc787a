package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/mew-protocol/mew/internal/auditfmt"
)

// lineBufSize is the initial capacity of the line buffer; maxLineBuf bounds
// the capacity kept after a large line.
const (
	lineBufSize = 4 << 10
	maxLineBuf  = 1 << 20
)

// retryInterval is how long a file whose write failed is left alone before
// the writer re-opens it: long enough not to hammer a full disk with a system
// call per line, short enough that little is lost once there is room again.
// reportInterval spaces the log messages about a failing file.
const (
	retryInterval  = time.Second
	reportInterval = time.Minute
)

// fileMode is the mode of every file the log creates: the envelopes may hold
// secrets (tool arguments, tokens in payloads), so only the owner reads them.
const fileMode = 0o600

// hooks replace file system calls in tests; nil fields mean the real ones.
type hooks struct {
	open   func(path string) (*os.File, error)
	rename func(oldpath, newpath string) error
	// noRetryDelay re-opens a failed file on the very next line.
	noRetryDelay bool
}

// sinkConfig is what every sink of a Log shares.
type sinkConfig struct {
	maxSize  int64 // rotate before the file would pass it; 0 never rotates
	maxFiles int   // rotated files kept; negative keeps all
	retry    time.Duration
	open     func(path string) (*os.File, error)
	rename   func(oldpath, newpath string) error
}

// writer is the state of the writer goroutine; nothing else touches it.
type writer struct {
	log      *slog.Logger
	stats    *counters
	now      func() time.Time
	cfg      sinkConfig
	env, dec *sink // nil when switched off
	line     []byte
	ts       secondCache
	badSeen  bool // a malformed JSON value has been logged
	chain    auditfmt.Hasher
	compact  bool   // Options.Format is FormatCompact
	bodies   bodies // in compact format: the envelopes whose body is written
}

// sink is one log file with its buffer and its rotated predecessors. Lines go
// into the buffer whole, and the buffer is flushed explicitly before it
// would overflow, so that pendLines and pendBytes say exactly what a flush
// will write.
type sink struct {
	path      string
	f         *os.File // nil while broken
	w         *bufio.Writer
	size      int64 // bytes in the file, not counting the buffer
	pendLines uint64
	pendBytes uint64

	rotated     []rotatedFile // oldest first
	renameRetry time.Time     // after a failed rename, no rotation before this
	broken      bool          // a write failed: lines are dropped until retryAt
	retryAt     time.Time
	lastErr     error
	reported    bool      // a failure has been logged
	lastReport  time.Time // when the last failure was logged
	failLogged  bool      // the last message about this file was a failure
	errsSince   uint64    // errors not yet in a log message
	lostSince   uint64    // lost lines not yet in a log message

	// The hash chain: the hash of the last line sealed, the number of
	// that line in the file, and whether the next line states the hash it
	// starts from (chain_prev). Set from the file by openFile.
	chain    auditfmt.Hash
	n        uint64
	needPrev bool
}

// openSink opens the file at path for appending and finds its rotated files.
func (w *writer) openSink(path string) (*sink, error) {
	s := &sink{path: path, w: bufio.NewWriterSize(nil, bufferSize)}
	rotated, err := findRotated(path)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	s.rotated = rotated
	// A new file continues the chain of the newest rotated one.
	if n := len(rotated); n > 0 {
		if l, ok := tailLink(rotated[n-1].path); ok {
			s.chain = l.Sum
		}
	}
	if err := w.openFile(s); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	w.prune(s)
	return s, nil
}

// openFile (re)opens s.path, creating it with fileMode, tightens the mode of
// an existing file that is looser, and takes up the hash chain where the
// file's last line left it. A file whose last line has no valid chain (cut
// off by a crash or a full disk, or written without a chain by an older
// gateway) is set aside as a rotated file first, so that every file is one
// chain: verifying the set-aside file reports the damage.
func (w *writer) openFile(s *sink) error {
	if err := w.openPath(s); err != nil {
		return err
	}
	s.needPrev = true
	if s.size == 0 {
		s.n = 0
		return nil
	}
	line, complete, err := lastLine(s.f, s.size)
	if err == nil && complete {
		if l, perr := auditfmt.ParseLink(line); perr == nil {
			s.chain, s.n = l.Sum, l.N
			return nil
		}
	}
	w.log.Warn("audit: log file does not end in a chained line; setting it aside and starting a new file", "file", s.path)
	if !w.setAside(s) {
		// It stays: the next line starts on a line of its own, and
		// verification reports the file from its bad line on.
		if !s.endsInNewline(s.size) {
			_ = s.w.WriteByte('\n') // the buffer is empty: cannot fail
		}
		s.n = 0
		return nil
	}
	if err := w.openPath(s); err != nil {
		return err
	}
	s.n = 0
	return nil
}

// setAside renames the open file of s as a rotated file, closing it, and
// reports whether that worked; on failure the file stays open.
func (w *writer) setAside(s *sink) bool {
	name := w.rotatedPath(s)
	if err := w.cfg.rename(s.path, name.path); err != nil {
		w.stats.errors.Add(1)
		w.log.Error("audit: cannot set the log file aside", "file", s.path, "err", err)
		return false
	}
	_ = s.f.Close()
	s.f = nil
	s.rotated = append(s.rotated, name)
	w.prune(s)
	return true
}

// openPath opens s.path, creating it with fileMode, and tightens the mode of
// an existing file that is looser.
func (w *writer) openPath(s *sink) error {
	// O_RDWR rather than O_WRONLY so that the tail can be read back with
	// ReadAt; O_APPEND makes every write go to the end.
	f, err := w.cfg.open(s.path)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	// Only regular files: a device or pipe given as the log is not ours to
	// change.
	if perm := fi.Mode().Perm(); fi.Mode().IsRegular() && perm&^fileMode != 0 {
		if err := f.Chmod(perm & fileMode); err != nil {
			_ = f.Close()
			return fmt.Errorf("restrict the mode of %s: %w", s.path, err)
		}
	}
	s.f, s.size = f, fi.Size()
	s.w.Reset(f)
	s.pendLines, s.pendBytes = 0, 0
	return nil
}

// openLogFile is the real sinkConfig.open.
func openLogFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, fileMode)
}

// endsInNewline reports whether the file of the given size is empty or ends
// in '\n'. When that cannot be read it reports false: a stray empty line is
// harmless, a line run into the next one is not.
func (s *sink) endsInNewline(size int64) bool {
	if size == 0 {
		return true
	}
	var b [1]byte
	if _, err := s.f.ReadAt(b[:], size-1); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return b[0] == '\n'
}

// write seals line (a line without its closing brace) with its chain
// members and writes it to s, rotating the file first when the line would
// take it past the size limit. A line that cannot be written is counted in
// Stats.Lost. It returns line's array for reuse: the caller's prefix is
// still in it.
func (w *writer) write(s *sink, line []byte) []byte {
	if s.broken && !w.retry(s) {
		w.lose(s, 1)
		return line
	}
	if w.cfg.maxSize > 0 {
		size := int64(len(line) + suffixLen(s.n+1, s.needPrev))
		if used := s.size + int64(s.w.Buffered()); used > 0 && used+size > w.cfg.maxSize {
			if !w.rotate(s) {
				w.lose(s, 1)
				return line
			}
		}
	}
	line = seal(&w.chain, s, line)
	if s.w.Available() < len(line) && s.w.Buffered() > 0 {
		if !w.flushSink(s) {
			w.lose(s, 1)
			return line
		}
	}
	// The line fits, or the buffer is empty and bufio writes a longer line
	// straight to the file.
	if _, err := s.w.Write(line); err != nil {
		w.fail(s, err, 1)
		return line
	}
	if s.w.Buffered() == 0 {
		s.size += int64(len(line))
		w.stats.lines.Add(1)
		w.stats.bytes.Add(uint64(len(line)))
		w.writing(s)
		return line
	}
	s.pendLines++
	s.pendBytes += uint64(len(line))
	return line
}

// skip counts the n lines of a record as lost without formatting them when s
// is broken and not yet due for a retry, and reports whether it did.
func (w *writer) skip(s *sink, n int) bool {
	if !s.broken || !w.now().Before(s.retryAt) {
		return false
	}
	w.lose(s, uint64(n))
	return true
}

// retry re-opens a broken sink once its pause is over, and reports whether
// it is writable again.
func (w *writer) retry(s *sink) bool {
	if w.now().Before(s.retryAt) {
		return false
	}
	if err := w.openFile(s); err != nil {
		w.fail(s, err, 0)
		return false
	}
	s.broken = false
	return true
}

// flushSink writes s's buffer to its file and reports whether that worked.
func (w *writer) flushSink(s *sink) bool {
	n := s.w.Buffered()
	if n == 0 {
		return true
	}
	if err := s.w.Flush(); err != nil {
		w.fail(s, err, 0)
		return false
	}
	s.size += int64(n)
	w.stats.writes.Add(1)
	w.stats.lines.Add(s.pendLines)
	w.stats.bytes.Add(s.pendBytes)
	s.pendLines, s.pendBytes = 0, 0
	w.writing(s)
	return true
}

// lose counts n lines that were not written.
func (w *writer) lose(s *sink, n uint64) {
	w.stats.lost.Add(n)
	s.lostSince += n
}

// fail handles a failed write, flush or open of s: it counts the error, and
// as lost the lines s had buffered plus lost more, closes the file, and
// leaves s broken until retryAt, when the next line re-opens the file. The
// buffered lines may have reached the file in part: Lost counts the lines
// not known to have been written whole.
func (w *writer) fail(s *sink, err error, lost uint64) {
	w.stats.errors.Add(1)
	s.errsSince++
	w.lose(s, lost+s.pendLines)
	if s == w.env {
		// A body may have been among the lost lines: write bodies again.
		w.bodies.reset()
	}
	s.pendLines, s.pendBytes = 0, 0
	if s.f != nil {
		// Closed rather than kept: the file may be gone or on a file
		// system that went away; the retry opens the path afresh.
		_ = s.f.Close()
		s.f = nil
	}
	s.w.Reset(nil)
	now := w.now()
	s.broken, s.retryAt, s.lastErr = true, now.Add(w.cfg.retry), err
	w.report(s, now, "audit: cannot write the log; its lines are dropped until writing works again", err)
}

// report logs a failure of s: the first one at once, later ones at most once
// per reportInterval with what was lost in between, so that a full disk
// does not flood the gateway's own log.
func (w *writer) report(s *sink, now time.Time, msg string, err error) {
	if s.reported && now.Sub(s.lastReport) < reportInterval {
		return
	}
	s.reported, s.lastReport, s.failLogged = true, now, true
	w.log.Error(msg, "file", s.path, "err", err, "errors", s.errsSince, "lost_lines", s.lostSince)
	s.errsSince, s.lostSince = 0, 0
}

// writing notes a successful write. After a logged failure it says once that
// the file is being written again, so that the last word in the gateway's
// log about a file is its current state.
func (w *writer) writing(s *sink) {
	if !s.failLogged {
		return
	}
	s.failLogged = false
	w.log.Warn("audit: writing the log again", "file", s.path, "lost_lines", s.lostSince)
	s.errsSince, s.lostSince = 0, 0
}

// sync asks the file system to make s's file durable (fsync), at rotation and
// close only; a failure is counted and logged, and writing goes on.
func (w *writer) sync(s *sink) {
	if s.f == nil {
		return
	}
	if err := s.f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		w.stats.errors.Add(1)
		w.log.Warn("audit: fsync failed", "file", s.path, "err", err)
	}
}

// flush flushes both files.
func (w *writer) flush() {
	if w.env != nil {
		w.flushSink(w.env)
	}
	if w.dec != nil {
		w.flushSink(w.dec)
	}
}

// close flushes and closes both files and returns the first error. A file
// that is broken at the end is an error too, with the last write error.
func (w *writer) close() error {
	var errs []error
	for _, s := range []*sink{w.env, w.dec} {
		if s == nil {
			continue
		}
		if s.w.Buffered() > 0 {
			if err := s.w.Flush(); err != nil {
				w.stats.errors.Add(1)
				w.lose(s, s.pendLines)
				errs = append(errs, fmt.Errorf("audit: flush %s: %w", s.path, err))
			} else {
				w.stats.lines.Add(s.pendLines)
				w.stats.bytes.Add(s.pendBytes)
			}
		}
		if s.f != nil {
			w.sync(s)
			if err := s.f.Close(); err != nil {
				errs = append(errs, fmt.Errorf("audit: close %s: %w", s.path, err))
			}
		} else if s.broken {
			errs = append(errs, fmt.Errorf("audit: %s was not writable at close: %w", s.path, s.lastErr))
		}
		if s.lostSince > 0 || s.errsSince > 0 {
			w.log.Error("audit: lines lost since the last report", "file", s.path, "errors", s.errsSince, "lost_lines", s.lostSince)
		}
	}
	return errors.Join(errs...)
}

// envelope writes the lines of one envelope record. In the compact format
// a delivered record becomes one grouped line per maxGroup recipients
// (appendGrouped), and its body is written only when no line written before
// holds it (an envelope the gateway itself sent, which has no received
// line), and then only on the first of those lines.
func (w *writer) envelope(r *EnvelopeRecord) {
	if w.env == nil {
		return
	}
	rcpts := r.Recipients
	if r.Event != Delivered || len(rcpts) == 0 {
		rcpts = []Recipient{{ID: r.Participant, Transport: r.Transport}}
	}
	grouped := w.compact && r.Event == Delivered
	everyone := grouped && r.Everyone && len(r.Recipients) > 0
	lines := len(rcpts)
	switch {
	case everyone:
		lines = 1
	case grouped:
		lines = (len(rcpts) + maxGroup - 1) / maxGroup
	}
	if w.skip(w.env, lines) {
		return
	}
	if w.compact && r.Abridged != nil {
		r.Envelope, r.Metadata = r.Abridged, r.AbridgedMeta
	}
	body := w.envelopeValue(r)
	metadata := w.value("metadata", r.Metadata, false, r.ID)
	line := w.line[:0]
	if !grouped {
		if w.compact && r.Event == Received && body != nil {
			w.bodies.add(r.ID, body)
		}
		line = w.appendEnvelopeHead(line, r, body)
		head := len(line)
		for i := range rcpts {
			line = appendEnvelopeTail(line[:head], r, rcpts[i].ID, rcpts[i].Transport, metadata)
			line = w.write(w.env, line)
		}
		w.keepLine(line)
		return
	}
	if body != nil && w.bodies.has(r.ID, body) {
		body = nil // its received line holds it
	}
	if everyone {
		line = w.appendEnvelopeHead(line[:0], r, body)
		line = appendEveryone(line, r, len(rcpts), metadata)
		line = w.write(w.env, line)
		if body != nil {
			w.bodies.add(r.ID, body)
		}
		w.keepLine(line)
		return
	}
	for len(rcpts) > 0 {
		n := min(len(rcpts), maxGroup)
		line = w.appendEnvelopeHead(line[:0], r, body)
		line = appendGrouped(line, r, rcpts[:n], metadata)
		line = w.write(w.env, line)
		if body != nil {
			w.bodies.add(r.ID, body)
			body = nil // the first line carries it, the others refer to it by id
		}
		rcpts = rcpts[n:]
	}
	w.keepLine(line)
}

// decision writes the line of one decision record.
func (w *writer) decision(r *DecisionRecord) {
	if w.dec == nil || w.skip(w.dec, 1) {
		return
	}
	line := w.appendDecision(w.line[:0], r)
	line = w.write(w.dec, line)
	w.keepLine(line)
}

// keepLine keeps line's array as the buffer for the next line, unless a huge
// line has made it too large to keep.
func (w *writer) keepLine(line []byte) {
	if cap(line) > maxLineBuf {
		w.line = make([]byte, 0, lineBufSize)
		return
	}
	w.line = line[:0]
}

// badValue counts a malformed JSON value and logs the first one.
func (w *writer) badValue(key, id string) {
	w.stats.errors.Add(1)
	if !w.badSeen {
		w.badSeen = true
		w.log.Warn("audit: record value is not JSON; written as null or left out, further cases are only counted",
			"key", key, "id", id)
	}
}
