package llm

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// This file is the offline model's arithmetic. A request that is an
// expression and nothing more ("what is 2+3*4", "(2+3)*4", "-3 + 5", "12
// times 7 minus 4") is parsed with the usual precedence: parentheses first,
// then powers (right to left), then unary minus, then × and ÷, then + and −,
// each level left to right. It is worked out one operation at a time, in
// that order, with the tools that do them (a tool whose name says add,
// subtract, multiply, divide or power and that takes two numbers), each
// call given the results before it; or, when a tool for one of its
// operations is missing, by the model itself, which says so. A division by
// zero is said plainly, never sent to a tool.

// mathKind is the kind of a token of arithmetic.
type mathKind int

const (
	mathNum   mathKind = iota
	mathOp             // + - * / ^
	mathOpen           // (
	mathClose          // )
	mathWord           // a word, lower case
	mathStop           // any other sign: it ends an expression
)

type mathTok struct {
	kind mathKind
	num  float64
	op   byte   // mathOp: '+', '-', '*', '/' or '^'
	word string // mathWord
}

// mathSigns are the operator signs people type.
var mathSigns = map[rune]byte{'+': '+', '-': '-', '−': '-', '–': '-', '*': '*', '×': '*', '·': '*', '/': '/', '÷': '/', '^': '^'}

// lexMath takes a request apart into tokens of arithmetic. Mentions
// ("@assistant") are dropped; a number glued to letters or to a second
// decimal point ("3-day" still lexes as 3, -, day: what follows decides)
// keeps only its digits.
func lexMath(s string) []mathTok {
	rs := []rune(s)
	var toks []mathTok
	digit := func(i int) bool { return i < len(rs) && rs[i] >= '0' && rs[i] <= '9' }
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case digit(i) || r == '.' && digit(i+1):
			j, dot := i, false
			for digit(j) || j < len(rs) && rs[j] == '.' && !dot && digit(j+1) {
				dot = dot || rs[j] == '.'
				j++
			}
			n, err := strconv.ParseFloat(string(rs[i:j]), 64)
			if err != nil || math.IsInf(n, 0) {
				toks = append(toks, mathTok{kind: mathStop})
			} else {
				toks = append(toks, mathTok{kind: mathNum, num: n})
			}
			i = j
		case mathSigns[r] != 0:
			toks = append(toks, mathTok{kind: mathOp, op: mathSigns[r]})
			i++
		case r == '(':
			toks = append(toks, mathTok{kind: mathOpen})
			i++
		case r == ')':
			toks = append(toks, mathTok{kind: mathClose})
			i++
		case r == '@':
			for i++; i < len(rs) && (isWordRune(rs[i]) || rs[i] == '-' || rs[i] == '_'); i++ {
			}
		case unicode.IsLetter(r):
			j := i
			for j < len(rs) && unicode.IsLetter(rs[j]) {
				j++
			}
			w := strings.ToLower(string(rs[i:j]))
			if n, ok := numberWords[w]; ok {
				toks = append(toks, mathTok{kind: mathNum, num: n})
			} else {
				toks = append(toks, mathTok{kind: mathWord, word: w})
			}
			i = j
		default:
			toks = append(toks, mathTok{kind: mathStop})
			i++
		}
	}
	return toks
}

// mathNode is an expression: a number, a negation (op 'n', of l) or an
// operation of l and r.
type mathNode struct {
	op   byte
	num  float64
	l, r *mathNode
}

// mathParser parses an expression from toks[pos:].
type mathParser struct {
	toks []mathTok
	pos  int
	ops  int // binary operations parsed
}

func (p *mathParser) peek(k int) (mathTok, bool) {
	if p.pos+k < len(p.toks) {
		return p.toks[p.pos+k], true
	}
	return mathTok{}, false
}

func (p *mathParser) word(k int, ws ...string) bool {
	t, ok := p.peek(k)
	return ok && t.kind == mathWord && slices.Contains(ws, t.word)
}

// binary reads the operator at pos, a sign or words ("plus", "times",
// "multiplied by", "divided by", "to the power of"), when it is one of ops,
// and consumes it.
func (p *mathParser) binary(ops string) (byte, bool) {
	t, ok := p.peek(0)
	if !ok {
		return 0, false
	}
	op, n := byte(0), 1
	switch {
	case t.kind == mathOp:
		op = t.op
	case p.word(0, "plus"):
		op = '+'
	case p.word(0, "minus"):
		op = '-'
	case p.word(0, "times", "x"):
		op = '*'
	case p.word(0, "multiplied", "divided"):
		op = '*'
		if t.word == "divided" {
			op = '/'
		}
		if p.word(1, "by") {
			n = 2
		}
	case p.word(0, "over"):
		op = '/'
	case p.word(0, "to") && p.word(1, "the") && p.word(2, "power") && p.word(3, "of"):
		op, n = '^', 4
	case p.word(0, "raised") && p.word(1, "to"):
		op, n = '^', 2
		if p.word(2, "the") && p.word(3, "power") && p.word(4, "of") {
			n = 5
		}
	}
	if op == 0 || !strings.ContainsRune(ops, rune(op)) {
		return 0, false
	}
	p.pos += n
	return op, true
}

// sum is + and −, left to right.
func (p *mathParser) sum() *mathNode { return p.chain("+-", p.product) }

// product is × and ÷, left to right.
func (p *mathParser) product() *mathNode { return p.chain("*/", p.unary) }

// chain is operands joined by the operations ops, left to right.
func (p *mathParser) chain(ops string, operand func() *mathNode) *mathNode {
	l := operand()
	for l != nil {
		save := p.pos
		op, ok := p.binary(ops)
		if !ok {
			break
		}
		r := operand()
		if r == nil {
			p.pos = save
			break
		}
		l, p.ops = &mathNode{op: op, l: l, r: r}, p.ops+1
	}
	return l
}

// unary is a minus ("-", "minus", "negative") or plus before an operand.
func (p *mathParser) unary() *mathNode {
	t, ok := p.peek(0)
	if !ok {
		return nil
	}
	neg := t.kind == mathOp && t.op == '-' || p.word(0, "minus", "negative")
	if !neg && (t.kind != mathOp || t.op != '+') {
		return p.power()
	}
	p.pos++
	x := p.unary()
	switch {
	case x == nil:
		p.pos--
		return nil
	case neg:
		return &mathNode{op: 'n', l: x}
	}
	return x
}

// power is ^, right to left; its exponent may have a sign.
func (p *mathParser) power() *mathNode {
	base := p.primary()
	if base == nil {
		return nil
	}
	save := p.pos
	if _, ok := p.binary("^"); ok {
		if exp := p.unary(); exp != nil {
			p.ops++
			return &mathNode{op: '^', l: base, r: exp}
		}
		p.pos = save
	}
	return base
}

// primary is a number or an expression in parentheses.
func (p *mathParser) primary() *mathNode {
	t, ok := p.peek(0)
	switch {
	case !ok:
		return nil
	case t.kind == mathNum:
		p.pos++
		return &mathNode{num: t.num}
	case t.kind == mathOpen:
		save, ops := p.pos, p.ops
		p.pos++
		x := p.sum()
		if c, ok := p.peek(0); x != nil && ok && c.kind == mathClose {
			p.pos++
			return x
		}
		p.pos, p.ops = save, ops
	}
	return nil
}

// mathFillers are the words a request for a calculation may have around
// its expression.
var mathFillers = map[string]bool{"calculate": true, "compute": true, "evaluate": true, "solve": true, "equals": true,
	"equal": true, "hey": true, "hi": true, "hello": true, "ok": true, "okay": true, "now": true, "quick": true,
	"quickly": true, "math": true, "work": true, "out": true, "whats": true}

// maxExpression bounds the length of a request read as a calculation: a
// calculation is asked in a line, and the search for one is quadratic.
const maxExpression = 400

// findExpression finds the expression that the request consists of: the
// longest run of tokens that parses as one with at least one operation,
// where every token outside it is a filler word ("what is", "calculate",
// "please") or a sign that ends it ("?", "="). It returns nil for anything
// else: "a 3-day trip", "1,000 + 5", "write 2+3 to a.txt".
func findExpression(text string) *mathNode {
	if len(text) > maxExpression {
		return nil
	}
	toks := lexMath(text)
	var best *mathNode
	bestFrom, bestTo := 0, 0
	for from := range toks {
		p := &mathParser{toks: toks, pos: from}
		x := p.sum()
		if x == nil || p.ops == 0 || p.pos-from <= bestTo-bestFrom {
			continue
		}
		best, bestFrom, bestTo = x, from, p.pos
	}
	if best == nil {
		return nil
	}
	for i, t := range toks {
		if i >= bestFrom && i < bestTo {
			continue
		}
		switch {
		case t.kind == mathStop:
		case t.kind == mathWord && (stopwords[t.word] || mathFillers[t.word]):
		default:
			return nil
		}
	}
	return best
}

// precedence of a node, for writing it back with the parentheses it
// needs.
func (x *mathNode) precedence() int {
	switch x.op {
	case '+', '-':
		return 1
	case '*', '/':
		return 2
	case 'n':
		return 3
	case '^':
		return 4
	}
	return 5
}

// mathSymbols are the signs the answers write.
var mathSymbols = map[byte]string{'+': "+", '-': "-", '*': "×", '/': "÷", '^': "^"}

// String writes the expression back, with the parentheses it needs.
func (x *mathNode) String() string {
	switch x.op {
	case 0:
		return formatNum(x.num)
	case 'n':
		return "-" + x.l.wrap(x.l.precedence() < 3 || x.l.op == 'n')
	}
	p := x.precedence()
	right := x.r.precedence() < p || x.r.precedence() == p && x.op != '^'
	left := x.l.precedence() < p || x.l.precedence() == p && x.op == '^'
	return x.l.wrap(left) + " " + mathSymbols[x.op] + " " + x.r.wrap(right)
}

func (x *mathNode) wrap(paren bool) string {
	if paren {
		return "(" + x.String() + ")"
	}
	return x.String()
}

// steps are the operations of the expression in the order they are worked
// out: each after the operations its operands need.
func (x *mathNode) steps() []*mathNode {
	var out []*mathNode
	var walk func(*mathNode)
	walk = func(n *mathNode) {
		if n == nil {
			return
		}
		walk(n.l)
		walk(n.r)
		if n.op != 0 && n.op != 'n' {
			out = append(out, n)
		}
	}
	walk(x)
	return out
}

// value is what node comes to, given the results of the operations worked
// out so far; false when one it needs is not in yet.
func (x *mathNode) value(done map[*mathNode]float64) (float64, bool) {
	switch x.op {
	case 0:
		return x.num, true
	case 'n':
		v, ok := x.l.value(done)
		return -v, ok
	}
	v, ok := done[x]
	return v, ok
}

// apply works out one operation.
func apply(op byte, a, b float64) float64 {
	switch op {
	case '+':
		return a + b
	case '-':
		return a - b
	case '*':
		return a * b
	case '/':
		return a / b
	}
	return math.Pow(a, b)
}

// formatNum writes a number as people do: 14, 2.5, -0.5, and 0.3 for
// 0.1+0.2 (twelve significant digits are plenty for an answer).
func formatNum(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	s := strconv.FormatFloat(x, 'g', 12, 64)
	if f, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "e") {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return s
}

// mathOpWords are the canonical words of the tools that do an operation.
var mathOpWords = map[byte]string{'+': "add", '-': "subtract", '*': "multiply", '/': "divide", '^': "power"}

// opTool finds the tool for one operation: its own name says the operation,
// and two numbers fill it.
func (t *turn) opTool(op string) (Tool, bool) {
	tools := slices.Clone(t.tools)
	slices.SortStableFunc(tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	for _, tl := range tools {
		if !slices.Contains(ownWords(tl.Name), op) {
			continue
		}
		if _, missing := (&query{numbers: []float64{1, 2}}).fill(tl, nil); len(missing) == 0 {
			return tl, true
		}
	}
	return Tool{}, false
}

// arithmetic works out the request's expression, one tool call per
// operation in the order of precedence, or all at once by itself when a
// tool is missing. It reports false when the request is no expression.
func (t *turn) arithmetic() (*Response, bool) {
	x := t.q.expr
	if x == nil {
		return nil, false
	}
	steps := x.steps()
	tools := make([]Tool, len(steps))
	var missing []string
	for i, s := range steps {
		tl, ok := t.opTool(mathOpWords[s.op])
		if !ok && !slices.Contains(missing, mathSymbols[s.op]) {
			missing = append(missing, mathSymbols[s.op])
		}
		tools[i] = tl
	}
	if len(missing) > 0 {
		return &Response{Content: labelled(workOut(x, steps, missing))}, true
	}
	done := map[*mathNode]float64{}
	var said []string
	for i, r := range t.results() {
		if i >= len(steps) || r.name != tools[i].Name {
			return &Response{Content: t.conclude()}, true
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(r.text), 64)
		if r.failed || err != nil {
			// A failure, or a result that is not a number: say what came back.
			return &Response{Content: t.conclude()}, true
		}
		a, _ := steps[i].l.value(done)
		b, _ := steps[i].r.value(done)
		done[steps[i]] = v
		said = append(said, fmt.Sprintf("%s %s %s = %s", formatNum(a), mathSymbols[steps[i].op], formatNum(b), formatNum(v)))
	}
	k := len(done)
	if k == len(steps) {
		v, _ := x.value(done)
		s := fmt.Sprintf("%s = %s", x, formatNum(v))
		if len(said) > 1 {
			s += " (" + strings.Join(said, ", then ") + ")"
		}
		return &Response{Content: labelled(s + ".")}, true
	}
	a, _ := steps[k].l.value(done)
	b, _ := steps[k].r.value(done)
	if steps[k].op == '/' && b == 0 {
		return &Response{Content: labelled(divisionByZero(x, a))}, true
	}
	args, _ := (&query{numbers: []float64{a, b}}).fill(tools[k], nil)
	why := fmt.Sprintf("Operation %d of %d of %s, in the order of precedence, is %s %s %s with the tool %s",
		k+1, len(steps), x, formatNum(a), mathSymbols[steps[k].op], formatNum(b), tools[k].Name)
	return t.call(tools[k], args, why), true
}

// workOut works out an expression with no tool, saying which operations
// had none.
func workOut(x *mathNode, steps []*mathNode, missing []string) string {
	done := map[*mathNode]float64{}
	for _, s := range steps {
		a, _ := s.l.value(done)
		b, _ := s.r.value(done)
		if s.op == '/' && b == 0 {
			return divisionByZero(x, a)
		}
		done[s] = apply(s.op, a, b)
	}
	v, _ := x.value(done)
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return fmt.Sprintf("%s has no value I can write: the result is too large or not a real number.", x)
	}
	return fmt.Sprintf("%s = %s. No tool here does %s, so the offline model worked it out itself.", x, formatNum(v), strings.Join(missing, " or "))
}

// divisionByZero says plainly why x has no value.
func divisionByZero(x *mathNode, dividend float64) string {
	return fmt.Sprintf("%s has no value: it divides %s by zero, and division by zero is undefined.", x, formatNum(dividend))
}
