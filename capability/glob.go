package capability

import (
	"strings"
	"unicode/utf8"
)

// glob is a compiled path glob: segments separated by '/'.
type glob struct {
	segs []gseg
}

// gseg is one segment of a glob.
type gseg struct {
	globstar bool   // the segment is exactly **
	toks     []gtok // otherwise its tokens
	starOnly bool   // the segment is exactly * (needs one character at least)
	wildLead bool   // the segment starts with a wildcard (cannot match a leading '.')
}

type gtokKind uint8

const (
	tLit  gtokKind = iota // literal text
	tStar                 // any run of characters within the segment
	tOne                  // exactly one character
)

type gtok struct {
	kind gtokKind
	lit  string
}

// isGlob reports whether s holds an unescaped * or ?, which makes a string
// pattern a glob.
func isGlob(s string) bool {
	return strings.ContainsAny(s, "*?")
}

// compileGlob compiles s, which isGlob accepted.
func compileGlob(s string) *glob {
	g := &glob{}
	for _, part := range splitUnescaped(s) {
		if part == "**" {
			// Consecutive globstars mean the same as one, and folding them
			// keeps matching linear.
			if n := len(g.segs); n > 0 && g.segs[n-1].globstar {
				continue
			}
			g.segs = append(g.segs, gseg{globstar: true})
			continue
		}
		g.segs = append(g.segs, compileSegment(part))
	}
	return g
}

// splitUnescaped splits s at '/' characters that are not escaped.
func splitUnescaped(s string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

func compileSegment(s string) gseg {
	var seg gseg
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			seg.toks = append(seg.toks, gtok{kind: tLit, lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 < len(s) {
				i++
				lit.WriteByte(s[i])
			} else {
				lit.WriteByte(c)
			}
		case '*':
			flush()
			if n := len(seg.toks); n > 0 && seg.toks[n-1].kind == tStar {
				continue // ** inside a segment is one *
			}
			seg.toks = append(seg.toks, gtok{kind: tStar})
		case '?':
			flush()
			seg.toks = append(seg.toks, gtok{kind: tOne})
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	seg.starOnly = len(seg.toks) == 1 && seg.toks[0].kind == tStar
	seg.wildLead = len(seg.toks) > 0 && seg.toks[0].kind != tLit
	return seg
}

// match reports whether s matches the glob. Segments are matched with the
// classic wildcard algorithm, backtracking only to the latest globstar, so
// the cost is bounded by the product of the segment counts.
func (g *glob) match(s string) bool {
	pi := 0
	si := 0 // start of the current segment of s; len(s)+1 when all are used
	starPi, starSi := -1, 0
	for si <= len(s) {
		seg, next := segmentAt(s, si)
		if pi < len(g.segs) {
			if g.segs[pi].globstar {
				starPi, starSi = pi, si
				pi++
				continue
			}
			if g.segs[pi].matchSegment(seg) {
				pi++
				si = next
				continue
			}
		}
		if starPi < 0 {
			return false
		}
		// Let the latest globstar take one more segment, if it may.
		absorbed, after := segmentAt(s, starSi)
		if strings.HasPrefix(absorbed, ".") {
			return false
		}
		starSi = after
		si = after
		pi = starPi + 1
	}
	for pi < len(g.segs) && g.segs[pi].globstar {
		pi++
	}
	return pi == len(g.segs)
}

// segmentAt returns the segment of s that starts at i and the start of the
// segment after it (len(s)+1 past the last).
func segmentAt(s string, i int) (string, int) {
	j := strings.IndexByte(s[i:], '/')
	if j < 0 {
		return s[i:], len(s) + 1
	}
	return s[i : i+j], i + j + 1
}

func (seg *gseg) matchSegment(s string) bool {
	if seg.wildLead && strings.HasPrefix(s, ".") {
		return false
	}
	if seg.starOnly {
		return s != ""
	}
	toks := seg.toks
	ti, si := 0, 0
	starTi, starSi := -1, 0
	for si < len(s) {
		if ti < len(toks) {
			switch t := toks[ti]; t.kind {
			case tStar:
				starTi, starSi = ti, si
				ti++
				continue
			case tOne:
				_, n := utf8.DecodeRuneInString(s[si:])
				si += n
				ti++
				continue
			default:
				if strings.HasPrefix(s[si:], t.lit) {
					si += len(t.lit)
					ti++
					continue
				}
			}
		}
		if starTi < 0 {
			return false
		}
		_, n := utf8.DecodeRuneInString(s[starSi:])
		starSi += n
		si = starSi
		ti = starTi + 1
	}
	for ti < len(toks) && toks[ti].kind == tStar {
		ti++
	}
	return ti == len(toks)
}
