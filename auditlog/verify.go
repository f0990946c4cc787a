package auditlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mew-protocol/mew/internal/auditfmt"
)

// The chain, as docs/audit.md defines it, is read and computed by
// auditfmt, which the writer uses too; the two are kept honest by test
// vectors generated apart from both (see auditfmt's doc).

// Problem is a place in a log where something is wrong.
type Problem struct {
	File   string // path of the file
	Line   int    // 1-based line number in File
	Reason string // what is wrong there, in words
}

func (p *Problem) String() string {
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Reason)
}

// LogReport is what [Verify] found for one log.
type LogReport struct {
	Name  string   // the log's file name
	Files []string // the files checked, oldest first, the current one last
	Lines int      // lines checked and found intact
	// Head is the hash of the last intact line (hex), the value to keep
	// elsewhere to detect later removal of lines at the end.
	Head string
	// StartsAfter is, when the oldest file continues an earlier one that is
	// no longer in the directory (deleted by retention, or removed), the
	// hash it continues from; "" when the oldest file starts the log.
	StartsAfter string
	// Problem is the first line where the chain breaks; nil when intact.
	Problem *Problem
}

// Report is the result of [Verify]: one LogReport per log found.
type Report struct {
	Logs []LogReport
}

// Intact reports whether no log has a problem.
func (r *Report) Intact() bool {
	for i := range r.Logs {
		if r.Logs[i].Problem != nil {
			return false
		}
	}
	return true
}

// ErrNoLogs is returned for a directory without audit log files.
var ErrNoLogs = errors.New("no audit log files")

// VerifyOptions configure [Verify].
type VerifyOptions struct {
	// MaxLineSize bounds a line; a longer one breaks the chain there. Not
	// positive: DefaultMaxLineSize.
	MaxLineSize int
}

// Verify checks the hash chain of both audit logs in dir: for each, its
// rotated files oldest first and then the current file, each line against
// the one before it and the first line of each file against the last of the
// file before. It stops a log at the first line where the chain breaks and
// says what happened there as far as the file tells: a line altered,
// inserted, removed, two lines swapped, a file cut off, a file missing. An
// error is returned only when the files cannot be read (or there are none:
// ErrNoLogs).
func Verify(dir string, opts VerifyOptions) (Report, error) {
	var rep Report
	for _, name := range []string{EnvelopeHistory, CapabilityDecisions} {
		files, err := Files(dir, name)
		if err != nil {
			return rep, err
		}
		if len(files) == 0 {
			continue
		}
		lr := LogReport{Name: name, Files: files}
		v := verifier{rep: &lr, max: opts.MaxLineSize}
		for i, f := range files {
			if err := v.file(f, i == 0); err != nil {
				return rep, err
			}
			if lr.Problem != nil {
				break
			}
		}
		if v.started {
			lr.Head = v.seed.String()
		}
		rep.Logs = append(rep.Logs, lr)
	}
	if len(rep.Logs) == 0 {
		return rep, fmt.Errorf("%s: %w", dir, ErrNoLogs)
	}
	return rep, nil
}

// verifier walks the lines of one log.
type verifier struct {
	c       auditfmt.Hasher
	rep     *LogReport
	max     int
	seed    auditfmt.Hash // hash of the last intact line
	started bool          // seed is set
	prevEnd string        // the file before the current one
}

// logLine is one line read from a file, owned by the verifier.
type logLine struct {
	b        []byte // without '\n'
	complete bool   // it ended in '\n'
	tooLong  bool
	link     auditfmt.Link
	err      error // from auditfmt.ParseLink
}

// readLine reads the next line of lr into dst's storage; ok is false at
// the end of the file.
func readLine(lr *lineReader, dst *logLine) (ok bool, err error) {
	l, ok, err := lr.next()
	if !ok || err != nil {
		return false, err
	}
	*dst = logLine{b: append(dst.b[:0], l.b...), complete: l.complete, tooLong: l.tooLong}
	if l.tooLong {
		dst.err = auditfmt.ErrNoChain
	} else {
		dst.link, dst.err = auditfmt.ParseLink(dst.b)
	}
	return true, nil
}

// file checks the lines of one file; first says it is the oldest file.
func (v *verifier) file(path string, first bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	lr := newLineReader(f, v.max)
	fail := func(n int, format string, args ...any) {
		v.rep.Problem = &Problem{File: path, Line: n, Reason: fmt.Sprintf(format, args...)}
	}
	// Two lines in turn: the one checked and the one after it, which
	// diagnose uses to tell an altered line from an inserted one.
	var bufs [2]logLine
	cur, next := &bufs[0], &bufs[1]
	ok, err := readLine(lr, cur)
	if err != nil {
		return err
	}
	if !ok {
		if !first {
			fail(1, "the file is empty: it was emptied, or its lines removed")
		}
		return nil
	}
	for p := 1; ; p++ {
		more, err := readLine(lr, next)
		if err != nil {
			return err
		}
		nx := next
		if !more {
			nx = nil
		}
		switch {
		case cur.tooLong:
			fail(p, "the line is longer than %d bytes: it was not written by mew, or the gateway's limits are above this reader's", cmpMax(v.max))
			return nil
		case !cur.complete:
			fail(p, "the line is cut off: the file ends inside it")
			return nil
		case cur.err != nil:
			fail(p, "the line has no valid chain member at its end: it was altered, or not written by mew")
			return nil
		}
		l := &cur.link
		if p == 1 {
			switch {
			case !l.HasPrev:
				fail(p, "the first line of the file does not state the hash it starts from (chain_prev): it was altered, or lines before it removed")
				return nil
			case first:
				if l.Prev != (auditfmt.Hash{}) {
					v.rep.StartsAfter = l.Prev.String()
				}
			case l.Prev != v.seed:
				fail(p, "the file does not continue %s: it starts from hash %x, that file ends with %x; a file between them is missing, or the end of %s was cut or altered",
					filepath.Base(v.prevEnd), l.Prev, v.seed, filepath.Base(v.prevEnd))
				return nil
			}
			v.seed, v.started = l.Prev, true
		} else if l.HasPrev && l.Prev != v.seed {
			// A writer that started again on this file states the hash
			// it continues from: the previous line must end with it.
			v.diagnose(p, cur, nx, fail)
			return nil
		}
		if l.N != uint64(p) || v.c.Next(&v.seed, l.Hashed) != l.Sum {
			v.diagnose(p, cur, nx, fail)
			return nil
		}
		v.seed = l.Sum
		v.rep.Lines++
		if nx == nil {
			v.prevEnd = path
			return nil
		}
		cur, next = next, cur
	}
}

func cmpMax(n int) int {
	if n <= 0 {
		return DefaultMaxLineSize
	}
	return n
}

// follows reports whether l is a valid line numbered n whose hash follows
// from seed.
func (v *verifier) follows(l *logLine, n int, seed *auditfmt.Hash) bool {
	return l != nil && l.complete && l.err == nil && l.link.N == uint64(n) && v.c.Next(seed, l.link.Hashed) == l.link.Sum
}

// diagnose names what happened at line p, which does not follow from the
// line before it, using the line after it (next, nil at the end of the
// file), and sets the problem.
func (v *verifier) diagnose(p int, cur, next *logLine, fail func(int, string, ...any)) {
	l := &cur.link
	switch {
	case l.N == uint64(p)+1 && next != nil && v.follows(next, p, &v.seed) &&
		v.follows(cur, p+1, &next.link.Sum):
		fail(p, "lines %d and %d are swapped", p, p+1)
	case next != nil && v.follows(next, p, &v.seed):
		fail(p, "the line was inserted: the line after it follows from the line before it")
	case next != nil && v.follows(next, p+1, &l.Sum):
		fail(p, "the line was altered: its hash no longer matches its bytes")
	case l.N > uint64(p)+1:
		fail(p, "lines are missing before this one (it is numbered %d): lines %d to %d were removed", l.N, p, l.N-1)
	case l.N == uint64(p)+1:
		fail(p, "a line is missing before this one (it is numbered %d): line %d was removed", l.N, p)
	case l.N < uint64(p):
		fail(p, "the line is numbered %d: it was inserted, or duplicated from line %d", l.N, l.N)
	case l.HasPrev && l.Prev != v.seed:
		fail(p, "the line continues from hash %x, the line before it ends with %x: the line before it was altered", l.Prev, v.seed)
	case next == nil:
		fail(p, "the line was altered: its hash no longer matches its bytes")
	default:
		fail(p, "the line does not follow from the line before it, nor the next from it: it was altered, and more around it")
	}
}
