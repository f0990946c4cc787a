package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"os"
	"strconv"
)

// The hash chain. Every line ends in
//
//	,"chain":"<n>:<hash>"}
//
// where n is the line's number in its file (1 for the first line) and hash
// is 32 lower-case hex digits: the first 16 bytes of SHA-256 over the
// previous line's hash (16 bytes) followed by this line's bytes before the
// hash, from '{' up to and including "<n>:". The first line a writer writes
// into a file (the first of a new file, and the first after the gateway
// started again on an existing one) also carries, just before chain,
//
//	,"chain_prev":"<hash>"
//
// which is the hash it starts from: the last hash of the previous file (the
// rotated one before it), the last hash of the file it continues, or 32
// zeros at the very start of a log. The member is part of the hashed bytes.
const (
	hashSize    = 16 // bytes of SHA-256 kept: 128 bits
	hashHex     = 2 * hashSize
	chainKey    = `,"chain":"`
	chainPrevKy = `,"chain_prev":"`
	// chainTail is the length of what follows the hashed bytes: the hex
	// hash and `"}`.
	chainTail = hashHex + 2
	// prevMember is the length of `,"chain_prev":"<hash>"`.
	prevMember = len(chainPrevKy) + hashHex + 1
	// maxTail bounds how far back the writer looks for the last line of a
	// file it continues: longer than the longest line it writes in practice
	// (an envelope of the 1 MiB default limit, escaped).
	maxTail = 16 << 20
)

// chainer computes the hashes of one writer; its buffers are reused.
type chainer struct {
	h   hash.Hash
	sum []byte
}

func newChainer() *chainer {
	return &chainer{h: sha256.New(), sum: make([]byte, 0, sha256.Size)}
}

// suffixLen is the number of bytes seal appends to a line (its closing brace
// and newline included) for line number n, with or without chain_prev.
func suffixLen(n uint64, prev bool) int {
	l := len(chainKey) + digits(n) + 1 + chainTail + 1
	if prev {
		l += prevMember
	}
	return l
}

func digits(n uint64) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// seal ends line, an envelope or decision line without its closing brace,
// with the chain members, '}' and '\n', and advances the chain of s. It
// returns the finished line, which may be a new array when line's was too
// small.
func (c *chainer) seal(s *sink, line []byte) []byte {
	s.n++
	if s.needPrev {
		line = append(line, chainPrevKy...)
		line = hex.AppendEncode(line, s.chain[:])
		line = append(line, '"')
		s.needPrev = false
	}
	line = append(line, chainKey...)
	line = strconv.AppendUint(line, s.n, 10)
	line = append(line, ':')
	c.h.Reset()
	c.h.Write(s.chain[:])
	c.h.Write(line)
	c.sum = c.h.Sum(c.sum[:0])
	copy(s.chain[:], c.sum)
	line = hex.AppendEncode(line, s.chain[:])
	return append(line, '"', '}', '\n')
}

// chainLink is what a line's chain members say.
type chainLink struct {
	n       uint64         // the line's number in its file
	sum     [hashSize]byte // its hash
	prev    [hashSize]byte // chain_prev, when hasPrev
	hasPrev bool
	hashed  []byte // the bytes the hash covers (without the previous hash)
}

// errNoChain: a line that does not end in a well-formed chain member.
var errNoChain = errors.New("no chain member at the end of the line")

// parseChain reads the chain members at the end of line (without its '\n').
func parseChain(line []byte) (chainLink, error) {
	var l chainLink
	end := len(line) - chainTail
	if end < 0 || !bytes.HasSuffix(line, []byte(`"}`)) {
		return l, errNoChain
	}
	if _, err := hex.Decode(l.sum[:], line[end:len(line)-2]); err != nil || !isLowerHex(line[end:len(line)-2]) {
		return l, errNoChain
	}
	if end == 0 || line[end-1] != ':' {
		return l, errNoChain
	}
	k := bytes.LastIndex(line[:end], []byte(chainKey))
	if k < 0 {
		return l, errNoChain
	}
	num := line[k+len(chainKey) : end-1]
	n, err := strconv.ParseUint(string(num), 10, 64)
	if err != nil || n == 0 || (len(num) > 1 && num[0] == '0') {
		return l, errNoChain
	}
	l.n = n
	l.hashed = line[:end]
	if p := k - prevMember; p >= 0 && bytes.HasPrefix(line[p:], []byte(chainPrevKy)) && line[k-1] == '"' {
		h := line[p+len(chainPrevKy) : k-1]
		if _, err := hex.Decode(l.prev[:], h); err != nil || !isLowerHex(h) {
			return l, errNoChain
		}
		l.hasPrev = true
	}
	return l, nil
}

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
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
func tailLink(path string) (chainLink, bool) {
	f, err := os.Open(path)
	if err != nil {
		return chainLink{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return chainLink{}, false
	}
	line, complete, err := lastLine(f, fi.Size())
	if err != nil || !complete || len(line) == 0 {
		return chainLink{}, false
	}
	l, err := parseChain(line)
	return l, err == nil
}
