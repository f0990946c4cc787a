package jsontape

import (
	"bytes"
	"math/big"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Raw returns the source bytes of node i: for a string, its content without
// quotes and with escapes as written; otherwise the whole token or container.
func (t *Tape) Raw(i uint32) []byte {
	n := t.Nodes[i]
	return t.Src[n.Start:n.End]
}

// RawValue returns node i as it appears in the source, quotes included, so that
// it is itself a JSON value.
func (t *Tape) RawValue(i uint32) []byte {
	n := t.Nodes[i]
	if n.Kind == String {
		return t.Src[n.Start-1 : n.End+1]
	}
	return t.Src[n.Start:n.End]
}

// Text returns the unescaped text of string node i. When the string holds no
// escape it is a slice of the source; otherwise it lives in a buffer of the
// tape that the next call to Text overwrites.
func (t *Tape) Text(i uint32) []byte {
	n := t.Nodes[i]
	raw := t.Src[n.Start:n.End]
	if n.Flags&FlagEscaped == 0 {
		return raw
	}
	t.scratch = AppendUnescaped(t.scratch[:0], raw)
	return t.scratch
}

// String returns the text of string node i as a new string.
func (t *Tape) String(i uint32) string { return string(t.Text(i)) }

// TextEquals reports whether string node i holds exactly s.
func (t *Tape) TextEquals(i uint32, s string) bool {
	n := t.Nodes[i]
	raw := t.Src[n.Start:n.End]
	if n.Flags&FlagEscaped == 0 {
		return string(raw) == s
	}
	return string(t.Text(i)) == s
}

// Lookup returns the value of the member of object node obj named key; a node
// that is not an object has no members.
func (t *Tape) Lookup(obj uint32, key string) (uint32, bool) {
	if t.Nodes[obj].Kind != Object {
		return 0, false
	}
	end := t.Nodes[obj].Next
	for k := obj + 1; k < end; k = t.Nodes[k+1].Next {
		if t.TextEquals(k, key) {
			return k + 1, true
		}
	}
	return 0, false
}

// Float returns the value of number node i.
func (t *Tape) Float(i uint32) (float64, error) {
	raw := t.Raw(i)
	// The string does not outlive the call, and the bytes are not changed
	// while it lives: a view avoids copying every number compared.
	return strconv.ParseFloat(unsafe.String(unsafe.SliceData(raw), len(raw)), 64)
}

// Equal reports whether nodes i and j hold equal JSON values: the same kind,
// equal strings after unescaping, numbers of exactly equal decimal value, and
// containers with equal members (objects in any order).
func (t *Tape) Equal(i, j uint32) bool {
	a, b := t.Nodes[i], t.Nodes[j]
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case String:
		if (a.Flags|b.Flags)&FlagEscaped == 0 {
			return bytes.Equal(t.Raw(i), t.Raw(j))
		}
		return t.sameString(i, j)
	case Number:
		if bytes.Equal(t.Raw(i), t.Raw(j)) {
			return true
		}
		t.numA = AppendNormalNumber(t.numA[:0], t.Raw(i))
		t.numB = AppendNormalNumber(t.numB[:0], t.Raw(j))
		return bytes.Equal(t.numA, t.numB)
	case Array:
		ci, cj := i+1, j+1
		for ci < a.Next && cj < b.Next {
			if !t.Equal(ci, cj) {
				return false
			}
			ci, cj = t.Nodes[ci].Next, t.Nodes[cj].Next
		}
		return ci == a.Next && cj == b.Next
	case Object:
		if t.Len(i) != t.Len(j) {
			return false
		}
		for k := i + 1; k < a.Next; k = t.Nodes[k+1].Next {
			v, ok := t.lookupNode(j, k)
			if !ok || !t.Equal(k+1, v) {
				return false
			}
		}
		return true
	}
	return true
}

// lookupNode finds in object obj the member whose name equals key node k.
func (t *Tape) lookupNode(obj, k uint32) (uint32, bool) {
	end := t.Nodes[obj].Next
	for m := obj + 1; m < end; m = t.Nodes[m+1].Next {
		if t.sameString(m, k) {
			return m + 1, true
		}
	}
	return 0, false
}

// Len returns the number of members of an object or elements of an array.
func (t *Tape) Len(i uint32) int {
	n := t.Nodes[i]
	count := 0
	switch n.Kind {
	case Object:
		for k := i + 1; k < n.Next; k = t.Nodes[k+1].Next {
			count++
		}
	case Array:
		for e := i + 1; e < n.Next; e = t.Nodes[e].Next {
			count++
		}
	}
	return count
}

// AppendUnescaped appends the text of the JSON string content raw (without
// quotes, already validated) to dst with escapes undone. Unpaired surrogates
// become U+FFFD, as encoding/json does.
func AppendUnescaped(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			j := bytes.IndexByte(raw[i:], '\\')
			if j < 0 {
				return append(dst, raw[i:]...)
			}
			dst = append(dst, raw[i:i+j]...)
			i += j
			continue
		}
		if i+1 >= len(raw) {
			return append(dst, '\\')
		}
		switch raw[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(raw[i+2:])
			if !ok {
				return append(dst, raw[i:]...)
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2, ok := hex4(raw[i+2:]); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							dst = utf8.AppendRune(dst, dec)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, raw[i+1])
		}
		i += 2
	}
	return dst
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		h := unhex(c)
		if h < 0 {
			return 0, false
		}
		r = r<<4 | h
	}
	return r, true
}

// AppendNormalNumber appends a canonical spelling of the valid JSON number raw
// to dst, such that two numbers have the same spelling exactly when they have
// the same decimal value: "0" for zero, otherwise an optional "-", the
// significant digits d1d2… and "e" with the exponent x, meaning 0.d1d2… × 10^x.
// Nothing goes through floating point, so 9007199254740993 differs from
// 9007199254740992 and 1e400 equals 10e399.
func AppendNormalNumber(dst, raw []byte) []byte {
	neg := len(raw) > 0 && raw[0] == '-'
	if neg {
		raw = raw[1:]
	}
	mant, expPart := raw, []byte(nil)
	if k := bytes.IndexAny(raw, "eE"); k >= 0 {
		mant, expPart = raw[:k], raw[k+1:]
	}
	intPart, frac := mant, []byte(nil)
	if k := bytes.IndexByte(mant, '.'); k >= 0 {
		intPart, frac = mant[:k], mant[k+1:]
	}
	// value = 0.(intPart frac) × 10^(len(intPart) + exponent); strip the
	// digits' leading zeros (each moves the point left) and trailing zeros.
	point := int64(len(intPart))
	digits := func(k int) byte {
		if k < len(intPart) {
			return intPart[k]
		}
		return frac[k-len(intPart)]
	}
	n := len(intPart) + len(frac)
	first := 0
	for first < n && digits(first) == '0' {
		first++
		point--
	}
	last := n
	for last > first && digits(last-1) == '0' {
		last--
	}
	if first == last {
		return append(dst, '0')
	}
	if neg {
		dst = append(dst, '-')
	}
	for k := first; k < last; k++ {
		dst = append(dst, digits(k))
	}
	dst = append(dst, 'e')
	if e, err := strconv.ParseInt(string(expPart), 10, 64); len(expPart) == 0 || (err == nil && e > -1<<62 && e < 1<<62) {
		return strconv.AppendInt(dst, e+point, 10)
	}
	// An exponent beyond int64: rare enough to afford big arithmetic.
	var e big.Int
	e.SetString(string(expPart), 10)
	return e.Add(&e, big.NewInt(point)).Append(dst, 10)
}
