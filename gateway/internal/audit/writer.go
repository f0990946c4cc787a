package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
)

// lineBufSize is the initial capacity of the line buffer; maxLineBuf bounds
// the capacity kept after a large line.
const (
	lineBufSize = 4 << 10
	maxLineBuf  = 1 << 20
)

// writer is the state of the writer goroutine; nothing else touches it.
type writer struct {
	log      *slog.Logger
	stats    *counters
	env, dec *sink // nil when switched off
	line     []byte
	ts       secondCache
	badSeen  bool // a malformed JSON value has been logged
}

// sink is one file with its buffer. Lines go into the buffer whole, and the
// buffer is flushed explicitly before it would overflow, so that pendLines and
// pendBytes say exactly what a flush will write.
type sink struct {
	path      string
	f         *os.File
	w         *bufio.Writer
	pendLines uint64
	pendBytes uint64
	checkTail bool // a write failed: make sure the file ends in '\n' first
	errSeen   bool // an error has been logged
}

func openSink(path string, logger *slog.Logger) (*sink, error) {
	// O_RDWR rather than O_WRONLY so that the tail can be read back with
	// ReadAt after a failed write; O_APPEND makes every write go to the end.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	s := &sink{path: path, f: f, w: bufio.NewWriterSize(f, bufferSize)}
	if !s.endsInNewline() {
		logger.Warn("audit: log file ends in a partial line; starting on a new line", "file", path)
		_ = s.w.WriteByte('\n') // the buffer is empty: cannot fail
	}
	return s, nil
}

// endsInNewline reports whether the file is empty or ends in '\n'. When that
// cannot be read it reports false: a stray empty line is harmless, a line run
// into the next one is not.
func (s *sink) endsInNewline() bool {
	fi, err := s.f.Stat()
	if err != nil {
		return false
	}
	if fi.Size() == 0 {
		return true
	}
	var b [1]byte
	if _, err := s.f.ReadAt(b[:], fi.Size()-1); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return b[0] == '\n'
}

// write writes one line (ending in '\n') to s.
func (w *writer) write(s *sink, line []byte) {
	if s.checkTail {
		s.checkTail = false
		if !s.endsInNewline() {
			_ = s.w.WriteByte('\n') // the buffer was reset: cannot fail
		}
	}
	if s.w.Available() < len(line) && s.w.Buffered() > 0 {
		if !w.flushSink(s) {
			return // this line is lost with the buffer
		}
	}
	// The line fits, or the buffer is empty and bufio writes a longer line
	// straight to the file.
	if _, err := s.w.Write(line); err != nil {
		w.fail(s, err)
		return
	}
	if s.w.Buffered() == 0 {
		w.stats.lines.Add(1)
		w.stats.bytes.Add(uint64(len(line)))
		return
	}
	s.pendLines++
	s.pendBytes += uint64(len(line))
}

// flushSink writes s's buffer to its file and reports whether that worked.
func (w *writer) flushSink(s *sink) bool {
	if s.w.Buffered() == 0 {
		return true
	}
	if err := s.w.Flush(); err != nil {
		w.fail(s, err)
		return false
	}
	w.stats.lines.Add(s.pendLines)
	w.stats.bytes.Add(s.pendBytes)
	s.pendLines, s.pendBytes = 0, 0
	return true
}

// fail counts a write error, logs the first one of s, drops what s had
// buffered and arranges for the next line to start on a new line.
func (w *writer) fail(s *sink, err error) {
	w.stats.errors.Add(1)
	if !s.errSeen {
		s.errSeen = true
		w.log.Error("audit: write failed; lines are lost, further errors are only counted", "file", s.path, "err", err)
	}
	s.w.Reset(s.f)
	s.pendLines, s.pendBytes = 0, 0
	s.checkTail = true
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

// close flushes and closes both files and returns the first error.
func (w *writer) close() error {
	var errs []error
	for _, s := range []*sink{w.env, w.dec} {
		if s == nil {
			continue
		}
		if s.w.Buffered() > 0 {
			if err := s.w.Flush(); err != nil {
				w.stats.errors.Add(1)
				errs = append(errs, fmt.Errorf("audit: flush %s: %w", s.path, err))
			} else {
				w.stats.lines.Add(s.pendLines)
				w.stats.bytes.Add(s.pendBytes)
			}
		}
		if err := s.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("audit: close %s: %w", s.path, err))
		}
	}
	return errors.Join(errs...)
}

// envelope writes the lines of one envelope record.
func (w *writer) envelope(r *EnvelopeRecord) {
	if w.env == nil {
		return
	}
	line := w.appendEnvelopeHead(w.line[:0], r)
	metadata := w.value("metadata", r.Metadata, false, r.ID)
	if r.Event == Delivered && len(r.Recipients) > 0 {
		head := len(line)
		for i := range r.Recipients {
			rc := &r.Recipients[i]
			line = appendEnvelopeTail(line[:head], r, rc.ID, rc.Transport, metadata)
			w.write(w.env, line)
		}
	} else {
		line = appendEnvelopeTail(line, r, r.Participant, r.Transport, metadata)
		w.write(w.env, line)
	}
	w.keepLine(line)
}

// decision writes the line of one decision record.
func (w *writer) decision(r *DecisionRecord) {
	if w.dec == nil {
		return
	}
	line := w.appendDecision(w.line[:0], r)
	w.write(w.dec, line)
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
