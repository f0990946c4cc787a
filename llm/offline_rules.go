package llm

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// This file is the offline model's reading of requests and tools: a request
// is taken apart into tokens (words, numbers, filenames, quoted texts,
// operators), words are reduced to a canonical form shared with the tools'
// names and descriptions, and a tool's JSON Schema says which tokens fill
// which argument (matching a tool: offline_match.go; filling its arguments:
// offline_args.go).

type tokenKind int

const (
	tokWord tokenKind = iota
	tokNumber
	tokPath
	tokQuoted
	tokOp
	tokDate // an ISO date, 2026-12-01, or date and time, 2026-12-01T10:00:00Z
)

type token struct {
	kind  tokenKind
	text  string  // as written
	canon string  // words: canonical form, "" for a filler word; ops: the operation
	num   float64 // numbers
}

// query is a request taken apart.
type query struct {
	text    string
	tokens  []token
	words   map[string]bool // canonical words, operations included
	numbers []float64
	paths   []string
	quoted  []string
	dates   []string
	// origin and dest are the places of "from X to Y" (either may come
	// alone: "a trip to Paris"); place is that of "in X" or "at X".
	origin, dest, place string
	// colonText is the text after the request's first ": ", and colonAt
	// the index of its first token ("remember in ideas.md: a bike shed").
	colonText string
	colonAt   int
	// expr is the expression the request consists of, if it is one
	// ("what is 2+3*4").
	expr *mathNode
	// writeText and writeTarget are the text and the file of "write TEXT
	// to FILE", as written; describedText is set when the text describes
	// what to write instead of giving it ("write a poem to a.txt").
	writeText, writeTarget string
	describedText          bool
	// noteText is what to remember when the request names no file
	// ("remember that the dentist is on Friday").
	noteText string
	// recall is a question about the notes, about topic ("what did I say
	// about the dentist"), or about all of them when topic is empty ("read
	// my notes").
	recall bool
	topic  string
	// verb is the request's first word after "please" and the like, lower
	// case.
	verb string
}

// synonyms map words to the canonical word of their meaning.
var synonyms = map[string]string{
	"add": "add", "plus": "add", "sum": "add", "total": "add", "addition": "add", "added": "add",
	"subtract": "subtract", "minus": "subtract", "difference": "subtract", "subtraction": "subtract",
	"subtracted": "subtract", "deduct": "subtract",
	"multiply": "multiply", "times": "multiply", "product": "multiply", "multiplication": "multiply",
	"multiplied": "multiply",
	"divide":     "divide", "divided": "divide", "division": "divide", "quotient": "divide",
	"power": "power", "pow": "power", "exponent": "power",
	"calculate": "calculate", "calculator": "calculate", "calc": "calculate", "compute": "calculate", "calculation": "calculate",
	"math": "calculate", "arithmetic": "calculate",
	"read": "read", "open": "read", "show": "read", "cat": "read", "view": "read", "display": "read",
	"content": "read", "contents": "read",
	"write": "write", "save": "write", "store": "write", "writing": "write", "written": "write",
	"remember": "write", "memorize": "write", "memorise": "write",
	"list": "list", "ls": "list", "enumerate": "list",
	"search": "search", "find": "search", "lookup": "search", "grep": "search",
	"delete": "delete", "remove": "delete", "rm": "delete", "erase": "delete",
	"echo": "echo", "repeat": "echo", "say": "echo",
	"file": "file", "files": "file",
	"directory": "directory", "dir": "directory", "folder": "directory", "directories": "directory",
	"move": "move", "rename": "move",
	"create": "create", "make": "create", "mkdir": "create",
	"north": "up", "south": "down", "west": "left", "east": "right",
	"time": "time", "clock": "time",
	"date": "date", "today": "date",
	"weather": "weather", "forecast": "weather",
}

// stopwords carry no meaning for choosing a tool.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or but of to in on at by for with from into onto as is are
		was were be been being am what which who whom how much many please pls can could would will shall
		should may might must you your me my i we us our it its this that these those do does did
		done give tell let know want need like some any all just also then than so very really result results
		answer use using call tool tools run get s t d m ll re ve don`) {
		stopwords[w] = true
	}
}

// numberWords are the numbers a request may spell out.
var numberWords = map[string]float64{
	"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
	"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
	"sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
}

// operators are the symbols of arithmetic.
var operators = map[string]string{
	"+": "add", "-": "subtract", "−": "subtract", "*": "multiply", "×": "multiply", "/": "divide", "÷": "divide", "^": "power",
}

// canon reduces a lower-case word to its canonical form, "" for a filler.
func canon(w string) string {
	if stopwords[w] {
		return ""
	}
	if s, ok := synonyms[w]; ok {
		return s
	}
	st := stem(w)
	if stopwords[st] {
		return ""
	}
	if s, ok := synonyms[st]; ok {
		return s
	}
	return st
}

// stem strips the commonest English endings.
func stem(w string) string {
	switch {
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		return w[:len(w)-3]
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// quoteCloser gives the closing quote for an opening one.
func quoteCloser(r rune) (rune, bool) {
	switch r {
	case '"', '\'', '`':
		return r, true
	case '“':
		return '”', true
	case '‘':
		return '’', true
	}
	return 0, false
}

// tokenize takes a request apart.
func tokenize(s string) []token {
	rs := []rune(s)
	var toks []token
	for i := 0; i < len(rs); {
		if unicode.IsSpace(rs[i]) {
			i++
			continue
		}
		if closer, ok := quoteCloser(rs[i]); ok && (i == 0 || !isWordRune(rs[i-1])) {
			if end := findCloser(rs, i+1, closer); end > i+1 {
				toks = append(toks, token{kind: tokQuoted, text: string(rs[i+1 : end])})
				i = end + 1
				continue
			}
		}
		j := i
		for j < len(rs) && !unicode.IsSpace(rs[j]) {
			j++
		}
		toks = append(toks, classify(string(rs[i:j]))...)
		i = j
	}
	// "7 x 6" multiplies.
	for k := 1; k+1 < len(toks); k++ {
		if toks[k].kind == tokWord && strings.EqualFold(toks[k].text, "x") &&
			toks[k-1].kind == tokNumber && toks[k+1].kind == tokNumber {
			toks[k] = token{kind: tokOp, text: toks[k].text, canon: "multiply"}
		}
	}
	return toks
}

// findCloser finds the quote that closes one opened before from; a closing
// apostrophe must end a word ("'hi'", not "what's").
func findCloser(rs []rune, from int, closer rune) int {
	for k := from; k < len(rs); k++ {
		if rs[k] == closer && (closer != '\'' || k+1 == len(rs) || !isWordRune(rs[k+1])) {
			return k
		}
	}
	return -1
}

// classify turns one run of non-space characters into tokens.
func classify(chunk string) []token {
	c := strings.TrimLeft(chunk, "([{<\"'`“‘")
	c = strings.TrimRight(c, ")]}>\"'`”’.,;:!?")
	if c == "" {
		return nil
	}
	if op, ok := operators[c]; ok {
		return []token{{kind: tokOp, text: c, canon: op}}
	}
	// Before numbers and expressions: 2026-12-01 is a day, not 2026 - 12 - 1.
	// A date-shaped text that is no valid date is not split into numbers
	// either; it fills nothing.
	if dateShape.MatchString(c) {
		if validDate(c) {
			return []token{{kind: tokDate, text: c}}
		}
		return []token{{kind: tokWord, text: c}}
	}
	if n, ok := parseNumber(strings.TrimRight(strings.TrimLeft(c, "$€£"), "%")); ok {
		return []token{{kind: tokNumber, text: c, num: n}}
	}
	if toks, ok := splitExpression(c); ok {
		return toks
	}
	if isPath(c) {
		return []token{{kind: tokPath, text: c}}
	}
	var toks []token
	for _, piece := range strings.FieldsFunc(c, func(r rune) bool { return !isWordRune(r) }) {
		lower := strings.ToLower(piece)
		if n, ok := numberWords[lower]; ok {
			toks = append(toks, token{kind: tokNumber, text: piece, num: n})
			continue
		}
		if strings.IndexFunc(lower, func(r rune) bool { return !unicode.IsDigit(r) }) < 0 {
			continue // digits glued to other signs, as in "1,000": no reliable number
		}
		toks = append(toks, token{kind: tokWord, text: piece, canon: canon(lower)})
	}
	return toks
}

// dateShape matches an ISO date, optionally with a time.
var dateShape = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$`)

// validDate tells a real day (and time) from a date-shaped text such as
// 2026-02-30.
func validDate(s string) bool {
	if len(s) == len(time.DateOnly) {
		_, err := time.Parse(time.DateOnly, s)
		return err == nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

// parseNumber accepts plain decimal numbers only (no "inf", "1e9", "0x10").
func parseNumber(s string) (float64, bool) {
	if s == "" {
		return 0, false
	}
	digits, dots := 0, 0
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '.':
			dots++
		case (r == '-' || r == '+') && i == 0:
		default:
			return 0, false
		}
	}
	if digits == 0 || dots > 1 {
		return 0, false
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(n, 0) {
		return 0, false
	}
	return n, true
}

// splitExpression reads "2+3", "7*6", "10/2" or "5-3".
func splitExpression(c string) ([]token, bool) {
	var toks []token
	rs := []rune(c)
	for i := 0; i < len(rs); {
		if len(toks)%2 == 1 { // an operator
			op, ok := operators[string(rs[i])]
			if !ok {
				return nil, false
			}
			toks = append(toks, token{kind: tokOp, text: string(rs[i]), canon: op})
			i++
			continue
		}
		j := i
		if rs[j] == '-' || rs[j] == '+' {
			j++
		}
		for j < len(rs) && (rs[j] >= '0' && rs[j] <= '9' || rs[j] == '.') {
			j++
		}
		n, ok := parseNumber(string(rs[i:j]))
		if !ok {
			return nil, false
		}
		toks = append(toks, token{kind: tokNumber, text: string(rs[i:j]), num: n})
		i = j
	}
	return toks, len(toks) >= 3 && len(toks)%2 == 1
}

// isPath tells a filename ("notes.txt", "./a/b.go", "/etc/hosts") from a
// word.
func isPath(c string) bool {
	if strings.IndexFunc(c, unicode.IsLetter) < 0 {
		return false
	}
	for _, prefix := range []string{"/", "./", "../", "~/"} {
		if strings.HasPrefix(c, prefix) && len(c) > len(prefix) {
			return true
		}
	}
	switch strings.ToLower(c) {
	case "e.g", "i.e", "etc", "vs":
		return false
	}
	d := strings.LastIndexByte(c, '.')
	if d <= 0 || d == len(c)-1 {
		return false
	}
	ext := c[d+1:]
	if len(ext) > 8 || strings.IndexFunc(ext, func(r rune) bool { return !isWordRune(r) }) >= 0 ||
		strings.IndexFunc(ext, unicode.IsLetter) < 0 {
		return false
	}
	last := rune(c[d-1])
	return isWordRune(last) || last == '_' || last == '-'
}

// mentionsAtStart are the "@participant" words that address a request.
var mentionsAtStart = regexp.MustCompile(`^(?:\s*@[\w.-]+[:,]?)+\s+`)

// analyze takes a request apart.
func analyze(text string) *query {
	text = mentionsAtStart.ReplaceAllString(strings.TrimSpace(text), "")
	q := &query{text: text, tokens: tokenize(text), words: map[string]bool{}}
	for i, t := range q.tokens {
		// "cat notes.txt" reads it; "move the cat" is about a cat.
		if t.kind == tokWord && strings.EqualFold(t.text, "cat") && (i+1 == len(q.tokens) || q.tokens[i+1].kind != tokPath) {
			q.tokens[i].canon = "cat"
		}
	}
	for _, t := range q.tokens {
		switch t.kind {
		case tokWord, tokOp:
			if t.canon != "" {
				q.words[t.canon] = true
			}
		case tokNumber:
			q.numbers = append(q.numbers, t.num)
		case tokPath:
			q.paths = append(q.paths, t.text)
			q.words["file"] = true
			for _, w := range nameWords(t.text) {
				// A file's name says nothing of what to do with it: "go"
				// of main.go is no move, "list" of list.txt no listing.
				if !slices.Contains(actions, w) {
					q.words[w] = true
				}
			}
		case tokQuoted:
			q.quoted = append(q.quoted, t.text)
		case tokDate:
			q.dates = append(q.dates, t.text)
		}
	}
	q.findPlaces()
	q.findColon()
	q.noteVerb()
	q.contentQuestion()
	q.findIntent()
	if len(q.paths) == 0 && len(q.dates) == 0 {
		q.expr = findExpression(text)
	}
	// "subtract 3 from 10" is 10 - 3.
	if q.words["subtract"] && len(q.numbers) >= 2 {
		seen, from := 0, false
		for _, t := range q.tokens {
			if t.kind == tokNumber {
				seen++
				if seen == 2 {
					break
				}
			}
			if seen == 1 && t.kind == tokWord && strings.EqualFold(t.text, "from") {
				from = true
			}
		}
		if from {
			q.numbers[0], q.numbers[1] = q.numbers[1], q.numbers[0]
		}
	}
	return q
}

// findColon finds the text that a colon introduces, when it is plain
// words: no filename, quoted text or date of the request is in it.
func (q *query) findColon() {
	before, after, ok := strings.Cut(q.text, ": ")
	if !ok || strings.TrimSpace(after) == "" {
		return
	}
	head, tail := tokenize(before), tokenize(after)
	if len(head)+len(tail) != len(q.tokens) || slices.ContainsFunc(tail, func(t token) bool {
		return t.kind == tokPath || t.kind == tokQuoted || t.kind == tokDate
	}) {
		return
	}
	q.colonText, q.colonAt = strings.TrimSpace(after), len(head)
}

// noteVerb reads "note" and "jot" as verbs that ask for something to be
// written down: at the head of the request ("note that ...", "please jot
// down ...") or after "make a" or "take a" ("make a note in todo.md: ...").
// Elsewhere "note" is a noun ("list my notes") and stays one.
func (q *query) noteVerb() {
	head := true
	for i, t := range q.tokens {
		if t.kind != tokWord {
			head = false
			continue
		}
		lower := strings.ToLower(t.text)
		after := func(words ...string) bool {
			j := i - 1
			if j >= 0 && strings.EqualFold(q.tokens[j].text, "a") {
				j--
			}
			return j >= 0 && q.tokens[j].kind == tokWord && slices.Contains(words, strings.ToLower(q.tokens[j].text))
		}
		if (lower == "note" || lower == "jot") && (head || after("make", "take")) {
			q.tokens[i].canon = "write"
			q.words["write"] = true
			return
		}
		if t.canon != "" {
			head = false
		}
	}
}

// actions are the canonical words that say what to do.
var actions = []string{"read", "write", "list", "search", "delete", "echo", "calculate",
	"add", "subtract", "multiply", "divide", "power", "move", "create"}

// mutating are the actions that change something. A request that names one
// goes only to a tool that does it; a request that names none never goes to
// a tool that does one.
var mutating = []string{"write", "delete", "move", "create"}

// does are the actions a tool's name or description names.
func does(t Tool) []string {
	name, desc := toolWords(t, parseSchema(t.Parameters))
	return slices.DeleteFunc(slices.Clone(actions), func(a string) bool { return !slices.Contains(name, a) && !slices.Contains(desc, a) })
}

// mutates tells a tool that changes something.
func mutates(t Tool) bool {
	return slices.ContainsFunc(does(t), func(a string) bool { return slices.Contains(mutating, a) })
}

// actions are the canonical words of the request that say what to do.
func (q *query) actions() []string {
	return slices.DeleteFunc(slices.Clone(actions), func(a string) bool { return !q.words[a] })
}

// The shapes of requests the offline model reads whole. polite is what may
// come before the verb.
const polite = `^\s*(?:(?:please|pls|can you|could you|would you|will you|kindly|now|then|ok|okay)[\s,]+)*`

var (
	// "write TEXT to FILE", "save 'TEXT' in FILE".
	writeShape = regexp.MustCompile(`(?is)` + polite + `(?:write|save|store|put|append)\s+(.+?)\s+(?:to|in|into|as)\s+(?:the\s+)?(?:file\s+)?(\S+?)[.!?]*\s*$`)
	// "remember that TEXT", "note: TEXT", "jot down TEXT", "remember to TEXT".
	noteShape = regexp.MustCompile(`(?is)` + polite + `(?:remember|memori[sz]e|note(?:\s+down)?|jot\s+down|(?:make|take)\s+a\s+note(?:\s+of)?)\b\s*(?:that\s+|to\s+|:\s*)?(.+?)[.!]*\s*$`)
	// "what did I say about TOPIC", "what do you remember about TOPIC".
	recallAbout = regexp.MustCompile(`(?is)^\s*(?:what|anything|tell me what|do you know anything)\b.*?\b(?:say|said|tell|told|note|noted|remember|know|write|wrote|written|mention|mentioned)\b.*?\babout\s+(.+?)\s*[?.!]*\s*$`)
	// "read my notes", "what are my notes", "what did I tell you".
	recallAll = regexp.MustCompile(`(?is)` + polite + `(?:(?:read|show|display|open)\s+(?:me\s+)?(?:all\s+)?(?:of\s+)?(?:my|the|our)\s+notes|what\s+(?:are|were)\s+my\s+notes|what\s+(?:did|have)\s+i\s+(?:told|tell|said|say|noted|note)(?:\s+you)?)\s*[?.!]*\s*$`)
	// "what files are there", "which notes do I have", "any documents?",
	// "what's in the folder".
	listQuestion = regexp.MustCompile(`(?is)\b(?:what|which|any|show|see)\b.*\b(?:files|notes|documents|folders|directories)\b|` +
		`\bwhat(?:'s|\s+is)\s+in\s+(?:the|this|my|our)\s+(?:folder|directory)\b`)
	// the first word after the polite ones.
	firstWord = regexp.MustCompile(`(?is)` + polite + `([a-z]+)`)
	// a text that describes what to write rather than giving it.
	described = regexp.MustCompile(`(?i)^(?:a|an|some)\s+\S`)
)

// findIntent reads the shapes of requests that are read whole: a text to
// write to a file, a note to remember, a question about the notes, a
// question about which files there are (a request to list them).
func (q *query) findIntent() {
	if m := firstWord.FindStringSubmatch(q.text); m != nil {
		q.verb = strings.ToLower(m[1])
	}
	if m := writeShape.FindStringSubmatch(q.text); m != nil {
		target := strings.Trim(m[2], "\"'`“”‘’")
		if isPath(target) {
			text, quoted := unquote(m[1])
			q.writeText, q.writeTarget = text, target
			q.describedText = !quoted && described.MatchString(text)
		}
	}
	if len(q.paths) == 0 {
		if m := noteShape.FindStringSubmatch(q.text); m != nil {
			q.noteText, _ = unquote(m[1])
		}
	}
	switch m := recallAbout.FindStringSubmatch(q.text); {
	case m != nil:
		q.recall, q.topic = true, m[1]
	case recallAll.MatchString(q.text):
		q.recall = true
	}
	if len(q.actions()) == 0 && len(q.paths) == 0 && len(q.quoted) == 0 && listQuestion.MatchString(q.text) {
		q.words["list"] = true
	}
}

// unquote strips the quotes around s, and reports whether there were any.
func unquote(s string) (string, bool) {
	s = strings.TrimSpace(s)
	rs := []rune(s)
	if len(rs) >= 2 {
		if closer, ok := quoteCloser(rs[0]); ok && rs[len(rs)-1] == closer {
			return string(rs[1 : len(rs)-1]), true
		}
	}
	return s, false
}

// contentQuestion reads a question about what a named file holds ("what is
// in notes.txt?", "what's inside main.go", "what does todo.md contain") as
// a request to read it, when no other action is named.
func (q *query) contentQuestion() {
	if len(q.paths) == 0 || slices.ContainsFunc(actions, func(w string) bool { return q.words[w] }) {
		return
	}
	for i, t := range q.tokens {
		lower := strings.ToLower(t.text)
		switch {
		case t.kind == tokWord && (lower == "contain" || lower == "contains" || lower == "hold" || lower == "holds"),
			t.kind == tokPath && i > 0 && q.tokens[i-1].kind == tokWord &&
				slices.Contains([]string{"in", "inside", "within"}, strings.ToLower(q.tokens[i-1].text)):
			q.words["read"] = true
			return
		}
	}
}

// findPlaces reads the places of the request: "from X to Y", "to Y", "in X",
// "at X", where X is a run of capitalised words ("New York"), or after
// "from" and "to" also one lower-case word that is not a filler
// ("from lisbon to paris").
func (q *query) findPlaces() {
	at := func(i int, lower bool) string {
		var words []string
		for _, t := range q.tokens[i:] {
			r, _ := utf8.DecodeRuneInString(t.text)
			if t.kind != tokWord || !unicode.IsUpper(r) {
				break
			}
			words = append(words, t.text)
		}
		if len(words) == 0 && lower && i < len(q.tokens) {
			if t := q.tokens[i]; t.kind == tokWord && t.canon != "" && synonyms[strings.ToLower(t.text)] == "" &&
				strings.IndexFunc(t.text, unicode.IsDigit) < 0 {
				words = append(words, t.text)
			}
		}
		return strings.Join(words, " ")
	}
	for i, t := range q.tokens {
		if t.kind != tokWord {
			continue
		}
		var dst *string
		lower := false
		switch strings.ToLower(t.text) {
		case "from":
			dst, lower = &q.origin, true
		case "to":
			dst, lower = &q.dest, true
		case "in", "at":
			dst = &q.place
		default:
			continue
		}
		if *dst == "" {
			*dst = at(i+1, lower)
		}
	}
}
