package natscluster

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// NATS forbids '.', '*', '>' and whitespace in a subject token, and a KV key
// may hold only [-/_=.a-zA-Z0-9]. Space ids, participant ids and key
// segments are any UTF-8 (cluster.CheckName), so each is escaped into one
// token of [A-Za-z0-9_-]: letters, digits and '-' stand for themselves,
// every other byte is '_' and two hex digits. The escape is injective, so
// two names never share a subject or key, and reversible, so a watch
// recovers the key. A name of MaxNameLen bytes escapes to at most three
// times that, well under the server's 4 KiB control line.

// plain reports whether escape leaves c as it is.
func plain(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-'
}

func escape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "_%02X", c)
	}
	return b.String()
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// unescape reverses escape. It refuses what escape never produces, so a
// key written by a buggy node is not mistaken for another.
func unescape(t string) (string, error) {
	var b strings.Builder
	b.Grow(len(t))
	for i := 0; i < len(t); i++ {
		c := t[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		if c != '_' {
			return "", fmt.Errorf("%w: token %.40q: byte %q is never left unescaped", cluster.ErrInvalid, t, c)
		}
		if i+2 >= len(t) {
			return "", fmt.Errorf("%w: token %.40q: short escape", cluster.ErrInvalid, t)
		}
		hi, ok1 := unhex(t[i+1])
		lo, ok2 := unhex(t[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("%w: token %.40q: bad escape", cluster.ErrInvalid, t)
		}
		v := hi<<4 | lo
		if plain(v) {
			return "", fmt.Errorf("%w: token %.40q: needless escape", cluster.ErrInvalid, t)
		}
		b.WriteByte(v)
		i += 2
	}
	return b.String(), nil
}

// kvKey is the KV key of a space's State key: the escaped space, then each
// escaped segment, separated by '.', so that a watch of one space is the
// subject filter "<space>.>".
func kvKey(space, key string) string {
	var b strings.Builder
	b.WriteString(escape(space))
	for seg := range strings.SplitSeq(key, "/") {
		b.WriteByte('.')
		b.WriteString(escape(seg))
	}
	return b.String()
}

// stateKey recovers the State key from a KV key under the space prefix
// (the escaped space and '.').
func stateKey(prefix, k string) (string, error) {
	rest, ok := strings.CutPrefix(k, prefix)
	if !ok || rest == "" {
		return "", fmt.Errorf("%w: key %.60q outside the space", cluster.ErrInvalid, k)
	}
	segs := strings.Split(rest, ".")
	for i, s := range segs {
		u, err := unescape(s)
		if err != nil {
			return "", err
		}
		segs[i] = u
	}
	key := strings.Join(segs, "/")
	if err := cluster.CheckKey(key); err != nil {
		return "", err
	}
	return key, nil
}

var clusterName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// names derived from the cluster name, which Options checks against
// clusterName so that it is safe in a subject and a bucket name.
func subjectPrefix(cluster string) string { return "mew." + cluster + ".space." }
func stateBucket(cluster string) string   { return "mew_" + cluster + "_state" }
func presenceBucket(cluster string) string {
	return "mew_" + cluster + "_presence"
}
