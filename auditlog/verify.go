package auditlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strconv"
)

// The chain, as docs/audit.md defines it: every line ends in
// ,"chain":"<n>:<hash>"} where n is the line's number in its file and hash
// is 32 hex digits, the first 16 bytes of SHA-256 over the previous line's
// hash (16 bytes) and this line's bytes before the hash. The first line a
// writer writes into a file also carries ,"chain_prev":"<hash>" before it:
// the hash it starts from. This verifier is written from that description
// alone and shares no code with the writer, so that a mistake in the
// writer's chain cannot hide itself.
const (
	hashSize    = 16
	hashHex     = 2 * hashSize
	chainKey    = `,"chain":"`
	chainPrevKy = `,"chain_prev":"`
	chainTail   = hashHex + 2 // the hash and `"}`
	prevMember  = len(chainPrevKy) + hashHex + 1
)

// chainLink is what a line's chain members say.
type chainLink struct {
	n       uint64
	sum     [hashSize]byte
	prev    [hashSize]byte // chain_prev, when hasPrev
	hasPrev bool
	hashed  []byte // the bytes the hash covers after the previous hash
}

var errNoChain = errors.New("no chain member at the end of the line")

// parseChain reads the chain members at the end of line (without '\n').
func parseChain(line []byte) (chainLink, error) {
	var l chainLink
	end := len(line) - chainTail
	if end <= 0 || !bytes.HasSuffix(line, []byte(`"}`)) || line[end-1] != ':' {
		return l, errNoChain
	}
	if !decodeHash(l.sum[:], line[end:len(line)-2]) {
		return l, errNoChain
	}
	k := bytes.LastIndex(line[:end], []byte(chainKey))
	if k < 0 {
		return l, errNoChain
	}
	num := line[k+len(chainKey) : end-1]
	n, err := strconv.ParseUint(string(num), 10, 64)
	if err != nil || n == 0 || num[0] == '0' || num[0] == '+' {
		return l, errNoChain
	}
	l.n, l.hashed = n, line[:end]
	if p := k - prevMember; p >= 0 && bytes.HasPrefix(line[p:], []byte(chainPrevKy)) && line[k-1] == '"' {
		if !decodeHash(l.prev[:], line[p+len(chainPrevKy):k-1]) {
			return l, errNoChain
		}
		l.hasPrev = true
	}
	return l, nil
}

// decodeHash decodes 32 lower-case hex digits into dst.
func decodeHash(dst, src []byte) bool {
	for _, c := range src {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	n, err := hex.Decode(dst, src)
	return err == nil && n == hashSize
}

// chainHash computes a line's hash from the previous one.
type chainHash struct {
	h   hash.Hash
	sum []byte
}

func (c *chainHash) of(prev *[hashSize]byte, l *chainLink) [hashSize]byte {
	if c.h == nil {
		c.h = sha256.New()
	}
	c.h.Reset()
	c.h.Write(prev[:])
	c.h.Write(l.hashed)
	c.sum = c.h.Sum(c.sum[:0])
	var out [hashSize]byte
	copy(out[:], c.sum)
	return out
}

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
			lr.Head = hex.EncodeToString(v.seed[:])
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
	c       chainHash
	rep     *LogReport
	max     int
	seed    [hashSize]byte // hash of the last intact line
	started bool           // seed is set
	prevEnd string         // the file before the current one
}

// logLine is one line read from a file, owned by the verifier.
type logLine struct {
	b        []byte // without '\n'
	complete bool   // it ended in '\n'
	tooLong  bool
	link     chainLink
	err      error // from parseChain
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
		dst.err = errNoChain
	} else {
		dst.link, dst.err = parseChain(dst.b)
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
			case !l.hasPrev:
				fail(p, "the first line of the file does not state the hash it starts from (chain_prev): it was altered, or lines before it removed")
				return nil
			case first:
				if l.prev != ([hashSize]byte{}) {
					v.rep.StartsAfter = hex.EncodeToString(l.prev[:])
				}
			case l.prev != v.seed:
				fail(p, "the file does not continue %s: it starts from hash %x, that file ends with %x; a file between them is missing, or the end of %s was cut or altered",
					filepath.Base(v.prevEnd), l.prev, v.seed, filepath.Base(v.prevEnd))
				return nil
			}
			v.seed, v.started = l.prev, true
		} else if l.hasPrev && l.prev != v.seed {
			// A writer that started again on this file states the hash
			// it continues from: the previous line must end with it.
			v.diagnose(p, cur, nx, fail)
			return nil
		}
		if l.n != uint64(p) || v.c.of(&v.seed, l) != l.sum {
			v.diagnose(p, cur, nx, fail)
			return nil
		}
		v.seed = l.sum
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
func (v *verifier) follows(l *logLine, n int, seed *[hashSize]byte) bool {
	return l != nil && l.complete && l.err == nil && l.link.n == uint64(n) && v.c.of(seed, &l.link) == l.link.sum
}

// diagnose names what happened at line p, which does not follow from the
// line before it, using the line after it (next, nil at the end of the
// file), and sets the problem.
func (v *verifier) diagnose(p int, cur, next *logLine, fail func(int, string, ...any)) {
	l := &cur.link
	switch {
	case l.n == uint64(p)+1 && next != nil && v.follows(next, p, &v.seed) &&
		v.follows(cur, p+1, &next.link.sum):
		fail(p, "lines %d and %d are swapped", p, p+1)
	case next != nil && v.follows(next, p, &v.seed):
		fail(p, "the line was inserted: the line after it follows from the line before it")
	case next != nil && v.follows(next, p+1, &l.sum):
		fail(p, "the line was altered: its hash no longer matches its bytes")
	case l.n > uint64(p)+1:
		fail(p, "lines are missing before this one (it is numbered %d): lines %d to %d were removed", l.n, p, l.n-1)
	case l.n == uint64(p)+1:
		fail(p, "a line is missing before this one (it is numbered %d): line %d was removed", l.n, p)
	case l.n < uint64(p):
		fail(p, "the line is numbered %d: it was inserted, or duplicated from line %d", l.n, l.n)
	case l.hasPrev && l.prev != v.seed:
		fail(p, "the line continues from hash %x, the line before it ends with %x: the line before it was altered", l.prev, v.seed)
	case next == nil:
		fail(p, "the line was altered: its hash no longer matches its bytes")
	default:
		fail(p, "the line does not follow from the line before it, nor the next from it: it was altered, and more around it")
	}
}
