package capability

import (
	"fmt"
	"strconv"
	"strings"
)

// Covering returns the index of the first pattern of s that covers pattern i
// of g: one that allows every envelope pattern i allows. When none does it
// returns -1 and the reason, for people. The answer is sound, not complete:
// where coverage cannot be worked out (a regular expression against another,
// a JSONPath condition of s that g does not repeat), the answer is no and the
// reason starts with "cannot decide".
//
// A pattern is covered by one pattern of s, never by several together, so
// that the covering pattern can be named (the gateway's audit records it).
func (s *Set) Covering(g *Set, i int) (int, string) {
	if g == nil || i < 0 || i >= len(g.pats) {
		return -1, "no such pattern"
	}
	gp := g.pats[i]
	var best *miss
	w := &work{left: maxCoverWork * 4}
	for j, p := range s.patterns() {
		m := coverPattern(p, gp, w)
		if m == nil {
			return j, ""
		}
		if best == nil || m.rank() > best.rank() {
			best = m
		}
	}
	if best == nil {
		return -1, "no capability to cover it"
	}
	return -1, best.String()
}

// Subsumes reports whether s allows every envelope g allows, each pattern of g
// being covered by a pattern of s (see [Set.Covering]). When it does not, the
// reason names the first pattern of g that is not covered, and why.
func (s *Set) Subsumes(g *Set) (bool, string) {
	for i := range g.patterns() {
		if j, why := s.Covering(g, i); j < 0 {
			return false, fmt.Sprintf("%s: %s", g.pats[i].raw, why)
		}
	}
	return true, ""
}

func (s *Set) patterns() []*pattern {
	if s == nil {
		return nil
	}
	return s.pats
}

// miss says why one pattern does not cover another.
type miss struct {
	at        string // where: "kind", "payload.params.name"
	msg       string
	undecided bool // the answer could not be worked out
	payload   bool // the kinds were covered; the payload was not
}

func (m *miss) String() string { return m.at + ": " + m.msg }

// rank orders reasons by how much they tell: a payload reason says more than
// a kind that does not match, an undecided one more than a plain no.
func (m *miss) rank() int {
	r := 0
	if m.payload {
		r += 2
	}
	if m.undecided {
		r++
	}
	return r
}

func notCovered(at string, r, g *valuePat) *miss {
	return &miss{at: at, msg: describe(r) + " does not cover " + describe(g)}
}

func undecided(at string, r, g *valuePat) *miss {
	return &miss{at: at, msg: "cannot decide whether " + describe(r) + " covers " + describe(g), undecided: true}
}

// coverPattern returns nil when r allows every envelope g allows.
func coverPattern(r, g *pattern, w *work) *miss {
	if m := coverValue(&r.kind, &g.kind, "kind", w); m != nil {
		return m
	}
	// A to member narrows a pattern: one without covers any; one with
	// covers only a pattern whose recipients it covers, every one of them.
	switch {
	case r.to == nil:
	case g.to == nil:
		return &miss{at: "to", msg: "any recipients (and broadcasts) are allowed here, but the covering pattern names its recipients"}
	default:
		if m := coverValue(r.to, g.to, "to", w); m != nil {
			return m
		}
	}
	// An absent or empty payload pattern allows any payload, even one that
	// is not an object; a pattern with members allows objects only.
	if r.payload == nil || len(r.payload.members) == 0 {
		return nil
	}
	if g.payload == nil || len(g.payload.members) == 0 {
		return &miss{at: "payload", msg: "any payload is allowed here, but the covering pattern has conditions on it", payload: true}
	}
	m := coverObject(r.payload, g.payload, "payload", w)
	if m != nil {
		m.payload = true
	}
	return m
}

// coverValue returns nil when every value g matches, r matches. Values are
// matched as matchNode does (and, for kinds, matchString, which agrees with
// it on strings).
func coverValue(r, g *valuePat, at string, w *work) *miss {
	switch {
	case r.kind == vAny:
		return nil
	case g.kind == vOneOf:
		for k := range g.items {
			if m := coverValue(r, &g.items[k], at, w); m != nil {
				return m
			}
		}
		return nil
	case r.kind == vOneOf:
		var best *miss
		for k := range r.items {
			m := coverValue(&r.items[k], g, at, w)
			if m == nil {
				// The matcher tries the items in order, and an item that
				// spends the deep-match budget before the covering one is
				// reached could exhaust it where g would not.
				for e := range k {
					if costly(&r.items[e]) {
						return &miss{at: at, msg: "cannot decide whether " + describe(r) + " covers " + describe(g) +
							": an earlier alternative has deep or JSONPath conditions", undecided: true}
					}
				}
				return nil
			}
			if best == nil || (m.undecided && !best.undecided) {
				best = m
			}
		}
		if best != nil && best.undecided {
			return best
		}
		return notCovered(at, r, g)
	}
	switch g.kind {
	case vString:
		if r.matchString(g.str) {
			return nil
		}
		return notCovered(at, r, g)
	case vNumber:
		if r.kind == vNumber && r.str == g.str {
			return nil
		}
	case vTrue, vFalse, vNull:
		if r.kind == g.kind {
			return nil
		}
	case vObject:
		if r.kind == vObject {
			return coverObject(r.obj, g.obj, at, w)
		}
	case vGlob:
		return coverGlob(r, g, at, w)
	case vRegex:
		switch r.kind {
		case vRegex:
			if r.str == g.str {
				return nil
			}
			return undecided(at, r, g)
		case vString, vGlob, vNot:
			return undecided(at, r, g)
		}
	case vNot:
		switch r.kind {
		case vNot:
			// The strings outside g's inner pattern are all outside r's
			// when r's inner pattern matches nothing g's does not.
			if m := coverValue(g.not, r.not, at, w); m == nil {
				return nil
			} else if m.undecided {
				return undecided(at, r, g)
			}
		case vRegex:
			return undecided(at, r, g)
		}
	}
	return notCovered(at, r, g)
}

// coverGlob decides whether r matches every string glob g matches.
func coverGlob(r, g *valuePat, at string, w *work) *miss {
	if lit, ok := g.glob.literal(); ok {
		if r.matchString(lit) {
			return nil
		}
		return notCovered(at, r, g)
	}
	switch r.kind {
	case vGlob:
		ok, decided := globCovers(r.glob, g.glob, w)
		switch {
		case ok:
			return nil
		case !decided:
			return undecided(at, r, g)
		}
	case vRegex:
		return undecided(at, r, g)
	case vNot:
		// r matches every string its inner pattern does not: enough when no
		// string matches both.
		if r.not.kind == vString {
			if !g.glob.match(r.not.str) {
				return nil
			}
			return notCovered(at, r, g)
		}
		if globsDisjoint(r.not.glob, g.glob) {
			return nil
		}
		return undecided(at, r, g)
	}
	return notCovered(at, r, g)
}

// coverObject returns nil when every object g matches, r matches: each
// member of r must be implied by a member of g. A plain key of r needs the
// same key in g with a value r's covers; a key glob, "**" or JSONPath member
// of r needs an identical member in g, since what else implies it is not
// worked out.
func coverObject(r, g *objectPat, at string, w *work) *miss {
	for i := range r.members {
		rm := &r.members[i]
		mat := at + memberPath(rm.key)
		gm := g.member(rm.kind, rm.key)
		if rm.kind == mKey {
			if gm == nil {
				return &miss{at: mat, msg: "required by the covering pattern, not by this one"}
			}
			if m := coverValue(&rm.value, &gm.value, mat, w); m != nil {
				return m
			}
			continue
		}
		if gm == nil || !equalValue(&rm.value, &gm.value) {
			return &miss{at: mat, msg: "cannot decide whether this condition is met; only an identical member of the same object is taken to imply it", undecided: true}
		}
	}
	return nil
}

func (o *objectPat) member(kind memberKind, key string) *memberPat {
	for i := range o.members {
		if m := &o.members[i]; m.kind == kind && m.key == key {
			return m
		}
	}
	return nil
}

// costly reports whether matching p may spend the deep-match budget.
func costly(p *valuePat) bool {
	switch p.kind {
	case vOneOf:
		for i := range p.items {
			if costly(&p.items[i]) {
				return true
			}
		}
	case vObject:
		for i := range p.obj.members {
			m := &p.obj.members[i]
			if m.kind == mDeep || m.kind == mJSONPath || costly(&m.value) {
				return true
			}
		}
	}
	return false
}

// equalValue reports whether two compiled value patterns are the same.
func equalValue(a, b *valuePat) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case vString, vGlob, vRegex, vNot, vNumber:
		return a.str == b.str
	case vOneOf:
		if len(a.items) != len(b.items) {
			return false
		}
		for i := range a.items {
			if !equalValue(&a.items[i], &b.items[i]) {
				return false
			}
		}
	case vObject:
		if len(a.obj.members) != len(b.obj.members) {
			return false
		}
		for i := range a.obj.members {
			am := &a.obj.members[i]
			bm := b.obj.member(am.kind, am.key)
			if bm == nil || !equalValue(&am.value, &bm.value) {
				return false
			}
		}
	}
	return true
}

// describe renders a value pattern for messages.
func describe(p *valuePat) string {
	switch p.kind {
	case vAny:
		return `"*"`
	case vRegex:
		return p.str
	case vNumber:
		return p.text
	case vTrue:
		return "true"
	case vFalse:
		return "false"
	case vNull:
		return "null"
	case vOneOf:
		parts := make([]string, len(p.items))
		for i := range p.items {
			parts[i] = describe(&p.items[i])
		}
		return "[" + strings.Join(parts, ",") + "]"
	case vObject:
		return "an object pattern"
	}
	return strconv.Quote(p.str)
}

// Deciding glob inclusion costs the product of the two globs' sizes; past
// this for one pair of globs, or four times this for one Covering call, it
// is not attempted and the answer is undecided, so that a huge pattern cannot
// make a delegation check slow.
const maxCoverWork = 1 << 16

// work is what is left of a Covering call's budget.
type work struct{ left int }

func (w *work) spend(n int) bool {
	w.left -= n
	return w.left >= 0
}

// literal returns the one string a glob without wildcards (its * and ?
// escaped) matches.
func (g *glob) literal() (string, bool) {
	var b strings.Builder
	for i, seg := range g.segs {
		if seg.globstar {
			return "", false
		}
		if i > 0 {
			b.WriteByte('/')
		}
		for _, t := range seg.toks {
			if t.kind != tLit {
				return "", false
			}
			b.WriteString(t.lit)
		}
	}
	return b.String(), true
}

// globCovers reports whether every string g matches, r matches, by aligning
// g's segments with r's: a globstar of r absorbs any run of g's segments
// that cannot start with "." (a globstar of g included), and any other
// segment of r must cover the segment of g it meets. decided is false when
// the globs are too large to compare.
func globCovers(r, g *glob, w *work) (ok, decided bool) {
	nr, ng := len(r.segs), len(g.segs)
	if (nr+1)*(ng+1) > maxCoverWork || !w.spend((nr+1)*(ng+1)) {
		return false, false
	}
	// dp[i*(ng+1)+j]: r.segs[i:] covers g.segs[j:].
	dp := make([]bool, (nr+1)*(ng+1))
	at := func(i, j int) *bool { return &dp[i*(ng+1)+j] }
	*at(nr, ng) = true
	for i := nr - 1; i >= 0; i-- {
		*at(i, ng) = r.segs[i].globstar && *at(i+1, ng)
	}
	for i := nr - 1; i >= 0; i-- {
		rs := &r.segs[i]
		for j := ng - 1; j >= 0; j-- {
			gs := &g.segs[j]
			switch {
			case rs.globstar:
				*at(i, j) = *at(i+1, j) || ((gs.globstar || !gs.mayLeadDot()) && *at(i, j+1))
			case gs.globstar:
				*at(i, j) = false
			default:
				c, d := segCovers(rs, gs, w)
				if !d {
					return false, false
				}
				*at(i, j) = c && *at(i+1, j+1)
			}
		}
	}
	return *at(0, 0), true
}

// mayLeadDot reports whether a (non-globstar) segment can match a string
// that starts with ".".
func (seg *gseg) mayLeadDot() bool {
	if seg.wildLead || len(seg.toks) == 0 {
		return false
	}
	return strings.HasPrefix(seg.toks[0].lit, ".")
}

// gunit is one character-level step of a segment: a literal rune, ? or *.
type gunit struct {
	kind gtokKind
	r    rune
}

func (seg *gseg) units() []gunit {
	var us []gunit
	for _, t := range seg.toks {
		if t.kind != tLit {
			us = append(us, gunit{kind: t.kind})
			continue
		}
		for _, r := range t.lit {
			us = append(us, gunit{kind: tLit, r: r})
		}
	}
	return us
}

// segCovers reports whether segment x matches every string segment y
// matches. A * of x absorbs any run of y's steps; a ? of x meets one ? or
// literal rune of y; a literal rune of x meets the same rune.
func segCovers(x, y *gseg, w *work) (ok, decided bool) {
	// Each comparison costs something, however small the segments.
	if !w.spend(32) {
		return false, false
	}
	if lit, isLit := y.literalSegment(); isLit {
		return x.matchSegment(lit), true
	}
	if x.wildLead && y.mayLeadDot() {
		return false, true
	}
	ys := y.units()
	if x.starOnly {
		// x needs one character at least: y must need one too.
		if y.starOnly {
			return true, true
		}
		for _, u := range ys {
			if u.kind != tStar {
				return true, true
			}
		}
		return false, true
	}
	xs := x.units()
	nx, ny := len(xs), len(ys)
	if (nx+1)*(ny+1) > maxCoverWork || !w.spend((nx+1)*(ny+1)) {
		return false, false
	}
	dp := make([]bool, (nx+1)*(ny+1))
	at := func(i, j int) *bool { return &dp[i*(ny+1)+j] }
	*at(nx, ny) = true
	for i := nx - 1; i >= 0; i-- {
		*at(i, ny) = xs[i].kind == tStar && *at(i+1, ny)
	}
	for i := nx - 1; i >= 0; i-- {
		for j := ny - 1; j >= 0; j-- {
			xu, yu := xs[i], ys[j]
			switch {
			case xu.kind == tStar:
				*at(i, j) = *at(i+1, j) || *at(i, j+1)
			case yu.kind == tStar:
				*at(i, j) = false
			case xu.kind == tOne:
				*at(i, j) = *at(i+1, j+1)
			default:
				*at(i, j) = yu.kind == tLit && yu.r == xu.r && *at(i+1, j+1)
			}
		}
	}
	return *at(0, 0), true
}

// literalSegment returns the one string a segment without wildcards matches.
func (seg *gseg) literalSegment() (string, bool) {
	if seg.globstar {
		return "", false
	}
	var b strings.Builder
	for _, t := range seg.toks {
		if t.kind != tLit {
			return "", false
		}
		b.WriteString(t.lit)
	}
	return b.String(), true
}

// globsDisjoint reports whether no string matches both globs, judged by the
// literal text every match of each must start and end with. It is sure when
// it says yes.
func globsDisjoint(a, b *glob) bool {
	if lit, ok := a.literal(); ok {
		return !b.match(lit)
	}
	if lit, ok := b.literal(); ok {
		return !a.match(lit)
	}
	pa, pb := a.literalPrefix(), b.literalPrefix()
	if !strings.HasPrefix(pa, pb) && !strings.HasPrefix(pb, pa) {
		return true
	}
	sa, sb := a.literalSuffix(), b.literalSuffix()
	return !strings.HasSuffix(sa, sb) && !strings.HasSuffix(sb, sa)
}

// literalPrefix returns text that every string the glob matches starts with.
func (g *glob) literalPrefix() string {
	var b strings.Builder
	for k := range g.segs {
		seg := &g.segs[k]
		if seg.globstar {
			break
		}
		for _, t := range seg.toks {
			if t.kind != tLit {
				return b.String()
			}
			b.WriteString(t.lit)
		}
		// A globstar may match no segment at all, so only a following
		// ordinary segment guarantees the separator.
		if k+1 == len(g.segs) || g.segs[k+1].globstar {
			break
		}
		b.WriteByte('/')
	}
	return b.String()
}

// literalSuffix returns text that every string the glob matches ends with.
func (g *glob) literalSuffix() string {
	var parts []string // in reverse order
	for k := len(g.segs) - 1; k >= 0; k-- {
		seg := &g.segs[k]
		if seg.globstar {
			break
		}
		full := true
		for i := len(seg.toks) - 1; i >= 0; i-- {
			if seg.toks[i].kind != tLit {
				full = false
				break
			}
			parts = append(parts, seg.toks[i].lit)
		}
		if !full || k == 0 || g.segs[k-1].globstar {
			break
		}
		parts = append(parts, "/")
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteString(parts[i])
	}
	return b.String()
}
