package auditfmt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"strconv"
)

// The hash chain. Every line ends in
//
//	,"chain":"<n>:<hash>"}
//
// where n is the line's number in its file (1 for the first line, written
// in decimal without leading zeros) and hash is 32 lower-case hex digits:
// the first 16 bytes of SHA-256 over the previous line's hash (16 bytes)
// followed by this line's bytes before the hash, from '{' up to and
// including "<n>:". The first line a writer writes into a file (the first
// of a new file, and the first after the gateway started again on an
// existing one) also carries, just before chain,
//
//	,"chain_prev":"<hash>"
//
// the hash it starts from: the last hash of the previous (rotated) file, the
// last hash of the file it continues, or 32 zeros at the very start of a
// log. That member is part of the hashed bytes.
const (
	HashSize = 16 // bytes of SHA-256 kept: 128 bits
	HashHex  = 2 * HashSize

	ChainKey     = `,"chain":"`
	ChainPrevKey = `,"chain_prev":"`

	// tail is the length of what follows the hashed bytes: the hex hash
	// and `"}`.
	tail = HashHex + 2
	// prevMember is the length of `,"chain_prev":"<hash>"`.
	prevMember = len(ChainPrevKey) + HashHex + 1
)

// Hash is one link of the chain; the zero Hash starts a log.
type Hash [HashSize]byte

// String is the hash as written: 32 lower-case hex digits.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// Link is what a line's chain members say.
type Link struct {
	N       uint64 // the line's number in its file
	Sum     Hash   // the line's hash
	Prev    Hash   // chain_prev, when HasPrev
	HasPrev bool
	// Hashed is the part of the line the hash covers after the previous
	// hash: everything before the hex hash. It shares the line's storage.
	Hashed []byte
}

// ErrNoChain is the error of a line that does not end in well-formed chain
// members.
var ErrNoChain = errors.New("no chain member at the end of the line")

// ParseLink reads the chain members at the end of line (without its '\n').
// It checks their form only; whether the hash follows is [Hasher.Next]'s
// question.
func ParseLink(line []byte) (Link, error) {
	var l Link
	end := len(line) - tail
	if end <= 0 || !bytes.HasSuffix(line, []byte(`"}`)) || line[end-1] != ':' {
		return l, ErrNoChain
	}
	if !decodeHash(&l.Sum, line[end:len(line)-2]) {
		return l, ErrNoChain
	}
	k := bytes.LastIndex(line[:end], []byte(ChainKey))
	if k < 0 {
		return l, ErrNoChain
	}
	n, ok := lineNumber(line[k+len(ChainKey) : end-1])
	if !ok {
		return l, ErrNoChain
	}
	l.N, l.Hashed = n, line[:end]
	if p := k - prevMember; p >= 0 && bytes.HasPrefix(line[p:], []byte(ChainPrevKey)) && line[k-1] == '"' {
		if !decodeHash(&l.Prev, line[p+len(ChainPrevKey):k-1]) {
			return l, ErrNoChain
		}
		l.HasPrev = true
	}
	return l, nil
}

// lineNumber reads n as the writer writes it: decimal digits, no sign, no
// leading zero, not 0, within uint64. One spelling per number, so that a
// line cannot be renumbered ("07" for "7") and keep a hash that covers the
// spelling.
func lineNumber(b []byte) (uint64, bool) {
	if len(b) == 0 || b[0] == '0' {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	return n, err == nil
}

// decodeHash decodes exactly 32 lower-case hex digits into dst.
func decodeHash(dst *Hash, src []byte) bool {
	if len(src) != HashHex {
		return false
	}
	for _, c := range src {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	_, err := hex.Decode(dst[:], src)
	return err == nil
}

// Hasher computes hashes of the chain; it reuses its buffers, so one is
// used by one goroutine at a time. The zero Hasher is ready to use.
type Hasher struct {
	h   hash.Hash
	sum []byte
}

// Next is the hash of a line whose hashed bytes are hashed (see
// [Link.Hashed]) and whose previous line's hash is prev.
func (c *Hasher) Next(prev *Hash, hashed []byte) Hash {
	if c.h == nil {
		c.h = sha256.New()
	}
	c.h.Reset()
	c.h.Write(prev[:])
	c.h.Write(hashed)
	c.sum = c.h.Sum(c.sum[:0])
	var out Hash
	copy(out[:], c.sum)
	return out
}

// Seal appends the chain members of line number n to line (a line without
// its closing brace) and the closing `"}`: chain_prev first when withPrev,
// then chain with the hash that follows from prev. It returns the line,
// which may be a new array, and the line's hash. It appends no '\n'.
func (c *Hasher) Seal(line []byte, prev *Hash, withPrev bool, n uint64) ([]byte, Hash) {
	if withPrev {
		line = append(line, ChainPrevKey...)
		line = hex.AppendEncode(line, prev[:])
		line = append(line, '"')
	}
	line = append(line, ChainKey...)
	line = strconv.AppendUint(line, n, 10)
	line = append(line, ':')
	sum := c.Next(prev, line)
	line = hex.AppendEncode(line, sum[:])
	return append(line, '"', '}'), sum
}

// SealLen is the number of bytes [Hasher.Seal] appends for line number n.
func SealLen(n uint64, withPrev bool) int {
	l := len(ChainKey) + digits(n) + 1 + tail
	if withPrev {
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
