package cli

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newLogCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Check a space's audit log",
		Long: `log works on the gateway's audit log: envelope-history.jsonl and
capability-decisions.jsonl with their rotated files, in <space>/.mew/logs by
default. The format, the hash chain and what verify checks are described in
docs/audit.md.`,
	}
	cmd.AddCommand(newLogVerifyCmd())
	return cmd
}

func newLogVerifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify [DIR]",
		Short: "Check that the audit log is whole: no line altered, removed or inserted",
		Long: `verify checks the hash chain of both audit logs in DIR: every rotated file
oldest first, then the current file, each line against the line before it and
the first line of each file against the end of the file before it.

DIR is the log directory, or a space directory whose log directory
(<mew dir>/logs) is checked; the default is the current directory.

When the logs are intact it prints, per log, the files and lines checked and
the hash of the last line (keep it elsewhere to detect a later removal of the
last lines), and exits 0. Otherwise it names the first line where the chain
breaks, as FILE:LINE and what happened there (altered, inserted, removed,
swapped, cut off, a file missing), and exits 1.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			logs, err := logDirOf(dir)
			if err != nil {
				return fmt.Errorf("log verify: %w", err)
			}
			rep, err := verifyLogs(logs)
			if err != nil {
				return fmt.Errorf("log verify: %w", err)
			}
			return printVerify(cmd.OutOrStdout(), &rep)
		},
	}
}

// logDirOf returns the audit log directory for dir: dir itself when it holds
// a log file, else the logs directory of the space in dir.
func logDirOf(dir string) (string, error) {
	if hasLogs(dir) {
		return dir, nil
	}
	mew, err := mewDirOf(dir)
	if err != nil {
		return "", err
	}
	if logs := filepath.Join(mew, "logs"); hasLogs(logs) {
		return logs, nil
	}
	return "", fmt.Errorf("no audit log in %s or in the logs directory of its space", dir)
}

// hasLogs reports whether dir holds an audit log file, current or rotated.
func hasLogs(dir string) bool {
	for _, pattern := range []string{"envelope-history*.jsonl", "capability-decisions*.jsonl"} {
		if m, _ := filepath.Glob(filepath.Join(glob(dir), pattern)); len(m) > 0 {
			return true
		}
	}
	return false
}

// glob escapes the glob metacharacters of a directory name.
func glob(dir string) string {
	var b []byte
	for i := 0; i < len(dir); i++ {
		switch c := dir[i]; c {
		case '*', '?', '[', '\\':
			b = append(b, '\\', c)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// printVerify prints the summary of rep and returns an error naming the first
// problem, if any.
func printVerify(w io.Writer, rep *verifyReport) error {
	files, lines := 0, 0
	var problems []error
	for i := range rep.Logs {
		l := &rep.Logs[i]
		files += len(l.Files)
		lines += l.Lines
		state := "intact"
		if l.Problem != nil {
			state = "intact before the break"
		}
		fmt.Fprintf(w, "%s: %s, %d lines %s", l.Name, plural(len(l.Files), "file"), l.Lines, state)
		if l.Head != "" && l.Problem == nil {
			fmt.Fprintf(w, ", last hash %s", l.Head)
		}
		fmt.Fprintln(w)
		if l.StartsAfter != "" {
			fmt.Fprintf(w, "  the oldest file continues from hash %s of a file no longer here (deleted by retention, or removed)\n", l.StartsAfter)
		}
		if l.Problem != nil {
			fmt.Fprintf(w, "  BROKEN at %s\n", l.Problem)
			problems = append(problems, errors.New(l.Problem.String()))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("log verify: the audit log was changed: %w", errors.Join(problems...))
	}
	fmt.Fprintf(w, "ok: %s, %d lines\n", plural(files, "file"), lines)
	return nil
}

// The audit log's files and the layout of a rotated file's name, as the
// gateway writes them (gateway/internal/audit; see docs/audit.md).
const (
	envelopeHistoryFile     = "envelope-history.jsonl"
	capabilityDecisionsFile = "capability-decisions.jsonl"
	rotatedLayout           = "20060102T150405.000Z"
)

// logFiles lists the files of the log name in dir: the rotated ones oldest
// first, then the current one.
func logFiles(dir, name string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	stem, ext := strings.TrimSuffix(name, ".jsonl")+".", ".jsonl"
	type rotated struct {
		path string
		at   time.Time
	}
	var rs []rotated
	for _, e := range entries {
		mid, ok := strings.CutPrefix(e.Name(), stem)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if mid, ok = strings.CutSuffix(mid, ext); !ok {
			continue
		}
		if at, err := time.Parse(rotatedLayout, mid); err == nil && at.Format(rotatedLayout) == mid {
			rs = append(rs, rotated{filepath.Join(dir, e.Name()), at})
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].at.Before(rs[j].at) })
	var files []string
	for _, r := range rs {
		files = append(files, r.path)
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		files = append(files, path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return files, nil
}

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

// Problem is the first place where a log's chain does not hold.
type Problem struct {
	File   string // path of the file
	Line   int    // 1-based line number in File
	Reason string // what is wrong there, in words
}

func (p *Problem) String() string {
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Reason)
}

// logReport is what verifyLogs found for one log.
type logReport struct {
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

// verifyReport is the result of verifyLogs: one logReport per log found.
type verifyReport struct {
	Logs []logReport
}

// errNoLogs is returned by verifyLogs for a directory without audit logs.
var errNoLogs = errors.New("no audit log files")

// verifyLogs checks the hash chain of both audit logs in dir: for each, its
// rotated files oldest first and then the current file, each line against
// the one before it and the first line of each file against the last of the
// file before. It stops a log at the first line where the chain breaks and
// says what happened there as far as the file tells: a line altered,
// inserted, removed, two lines swapped, a file cut off, a file missing. An
// error is returned only when the files cannot be read.
func verifyLogs(dir string) (verifyReport, error) {
	var rep verifyReport
	for _, name := range []string{envelopeHistoryFile, capabilityDecisionsFile} {
		files, err := logFiles(dir, name)
		if err != nil {
			return rep, err
		}
		if len(files) == 0 {
			continue
		}
		lr := logReport{Name: name, Files: files}
		v := verifier{rep: &lr}
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
		return rep, fmt.Errorf("%s: %w", dir, errNoLogs)
	}
	return rep, nil
}

// verifier walks the lines of one log.
type verifier struct {
	c       chainHash
	rep     *logReport
	seed    [hashSize]byte // hash of the last intact line
	started bool           // seed is set
	prevEnd string         // the file before the current one
}

// logLine is one line read from a file.
type logLine struct {
	b        []byte // without '\n'
	complete bool   // it ended in '\n'
	link     chainLink
	err      error // from parseChain
}

// readLine reads the next line of r into a fresh slice; ok is false at the
// end of the file.
func readLine(r *bufio.Reader) (l *logLine, ok bool, err error) {
	b, err := r.ReadBytes('\n')
	if len(b) == 0 {
		if err == io.EOF {
			return nil, false, nil
		}
		return nil, false, err
	}
	if err != nil && err != io.EOF {
		return nil, false, err
	}
	l = &logLine{b: b, complete: b[len(b)-1] == '\n'}
	if l.complete {
		l.b = b[:len(b)-1]
	}
	l.link, l.err = parseChain(l.b)
	return l, true, nil
}

// file checks the lines of one file; first says it is the oldest file.
func (v *verifier) file(path string, first bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	fail := func(n int, format string, args ...any) {
		v.rep.Problem = &Problem{File: path, Line: n, Reason: fmt.Sprintf(format, args...)}
	}
	cur, ok, err := readLine(r)
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
		next, more, err := readLine(r)
		if err != nil {
			return err
		}
		if !more {
			next = nil
		}
		if !cur.complete {
			fail(p, "the line is cut off: the file ends inside it")
			return nil
		}
		if cur.err != nil {
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
			v.diagnose(p, cur, next, fail)
			return nil
		}
		if l.n != uint64(p) || v.c.of(&v.seed, l) != l.sum {
			v.diagnose(p, cur, next, fail)
			return nil
		}
		v.seed = l.sum
		v.rep.Lines++
		if next == nil {
			v.prevEnd = path
			return nil
		}
		cur = next
	}
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
