package audit

import (
	"bytes"
	"errors"
	"io"
	"os"

	"github.com/mew-protocol/mew/internal/auditfmt"
)

// The hash chain's format and arithmetic are auditfmt's (see its doc); the
// writer keeps the chain of each sink and seals each line with it.

// maxTail bounds how far back the writer looks for the last line of a file
// it continues: longer than the longest line it writes in practice (an
// envelope of the 1 MiB default limit, escaped).
const maxTail = 16 << 20

// suffixLen is the number of bytes seal appends to a line (its closing brace
// and newline included) for line number n, with or without chain_prev.
func suffixLen(n uint64, prev bool) int { return auditfmt.SealLen(n, prev) + 1 }

// seal ends line, an envelope or decision line without its closing brace,
// with the chain members, '}' and '\n', and advances the chain of s. It
// returns the finished line, which may be a new array when line's was too
// small.
func seal(h *auditfmt.Hasher, s *sink, line []byte) []byte {
	s.n++
	line, s.chain = h.Seal(line, &s.chain, s.needPrev, s.n)
	s.needPrev = false
	return append(line, '\n')
}

// lastLine returns the last line of the open file f of the given size,
// without its '\n'. complete is false when the file does not end in '\n'
// (its last line was cut off) or the line is longer than maxTail.
func lastLine(f io.ReaderAt, size int64) (line []byte, complete bool, err error) {
	if size == 0 {
		return nil, true, nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	if last[0] != '\n' {
		return nil, false, nil
	}
	end := size - 1 // the final '\n'
	const chunk = 64 << 10
	var buf []byte
	for start := end; ; {
		n := min(int64(chunk), start)
		start -= n
		b := make([]byte, n, n+int64(len(buf)))
		if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return nil, false, err
		}
		buf = append(b, buf...)
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			return buf[i+1:], true, nil
		}
		if start == 0 {
			return buf, true, nil
		}
		if int64(len(buf)) > maxTail {
			return nil, false, nil
		}
	}
}

// tailLink reads the chain of the last line of the file at path: ok is false
// when the file is missing, empty, or its last line has no valid chain.
func tailLink(path string) (auditfmt.Link, bool) {
	f, err := os.Open(path)
	if err != nil {
		return auditfmt.Link{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return auditfmt.Link{}, false
	}
	line, complete, err := lastLine(f, fi.Size())
	if err != nil || !complete || len(line) == 0 {
		return auditfmt.Link{}, false
	}
	l, err := auditfmt.ParseLink(line)
	return l, err == nil
}
