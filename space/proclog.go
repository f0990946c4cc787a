package space

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// A process's log (logs/<id>.log) is bounded three ways, so that a
// participant that writes without pause cannot fill the disk: its bytes per
// second (past the rate, output is dropped and the drop noted in the log),
// the size of the file (past it the file is rotated: <id>.log.1, .2, ...),
// and the rotated files kept.
const (
	logRate     = 256 << 10 // bytes a second
	logBurst    = 4 << 20
	logMaxSize  = 16 << 20
	logMaxFiles = 3
)

// procLog is the writer of one process's log, kept across its restarts. It
// is safe for concurrent use (stdout and stderr write to it at once).
type procLog struct {
	mu       sync.Mutex
	path     string
	maxSize  int64 // logMaxSize; smaller in tests
	maxFiles int
	f        *os.File
	size     int64
	lim      *rate.Limiter
	dropped  int64
	err      error // the last error opening or writing the file
}

func newProcLog(path string) *procLog {
	return &procLog{path: path, maxSize: logMaxSize, maxFiles: logMaxFiles, lim: rate.NewLimiter(logRate, logBurst)}
}

// Write writes p, or counts it as dropped past the rate; it never fails,
// so that a full disk or a closed log never stops the process it logs.
func (l *procLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.lim.AllowN(now, len(p)) {
		l.dropped += int64(len(p))
		return len(p), nil
	}
	if l.dropped > 0 {
		l.write([]byte(fmt.Sprintf("\n[mew: %d bytes of output left out of this log: more than %d KiB a second]\n", l.dropped, logRate>>10)))
		l.dropped = 0
	}
	l.write(p)
	return len(p), nil
}

// write appends p, rotating first when the file would grow past its size.
// mu must be held.
func (l *procLog) write(p []byte) {
	if l.f != nil && l.size+int64(len(p)) > l.maxSize {
		l.rotate()
	}
	if l.f == nil {
		f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			l.err = err
			return
		}
		st, err := f.Stat()
		if err == nil {
			l.size = st.Size()
		}
		l.f = f
		if l.size+int64(len(p)) > l.maxSize && l.size > 0 {
			l.rotate()
			if l.f == nil {
				return
			}
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	if err != nil {
		l.err = err
	}
}

// rotate renames the file to .1 (and .1 to .2, ...; the oldest goes) and
// opens a new one. mu must be held.
func (l *procLog) rotate() {
	_ = l.f.Close()
	l.f, l.size = nil, 0
	_ = os.Remove(l.path + "." + strconv.Itoa(l.maxFiles))
	for i := l.maxFiles - 1; i >= 1; i-- {
		_ = os.Rename(l.path+"."+strconv.Itoa(i), l.path+"."+strconv.Itoa(i+1))
	}
	_ = os.Rename(l.path, l.path+".1")
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		l.err = err
		return
	}
	l.f = f
}

// Close closes the file; a later Write opens it again.
func (l *procLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
