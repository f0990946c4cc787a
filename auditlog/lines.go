package auditlog

import (
	"bufio"
	"errors"
	"io"
)

// DefaultMaxLineSize bounds a line when [ReadOptions.MaxLineSize] is not
// positive: well above the gateway's largest line (an envelope of its
// default 1 MiB limit, with its line's members), far below what would hurt.
const DefaultMaxLineSize = 16 << 20

// lineReader reads the lines of one file without ever holding more than max
// bytes of a line: a longer line is read to its end and dropped, and
// reported as too long.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	if max <= 0 {
		max = DefaultMaxLineSize
	}
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// line is what next read. b is valid until the next call.
type line struct {
	b        []byte // without '\n'; nil when tooLong
	complete bool   // it ended in '\n'
	tooLong  bool   // it was longer than the bound and was dropped
	n        int64  // bytes of the input it took, the '\n' included
}

// next reads the next line; ok is false at the end of the input.
func (lr *lineReader) next() (l line, ok bool, err error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		l.n += int64(len(chunk))
		if !l.tooLong {
			if len(lr.buf)+len(chunk) > lr.max+1 { // +1: the '\n'
				l.tooLong, lr.buf = true, lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
			l.complete = true
		case err == io.EOF:
			if len(chunk) == 0 && len(lr.buf) == 0 && !l.tooLong {
				return l, false, nil
			}
		default:
			return l, false, err
		}
		if !l.tooLong {
			l.b = lr.buf
			if l.complete {
				l.b = l.b[:len(l.b)-1]
			}
		}
		return l, true, nil
	}
}
