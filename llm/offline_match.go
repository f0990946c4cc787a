package llm

import (
	"slices"
	"strings"
	"unicode"
)

// This file is how the offline model matches a request to a tool: the words
// of a tool's name and description, a tool's score against the request, and
// what of the request is left for the tool's arguments.

// nameWords are the canonical words of a tool name ("calculator_add",
// "participant/tool", "getWeather").
func nameWords(name string) []string {
	var words []string
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return !isWordRune(r) }) {
		rs := []rune(part)
		start := 0
		for i := 1; i <= len(rs); i++ {
			if i == len(rs) || unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i-1]) {
				if w := canon(strings.ToLower(string(rs[start:i]))); w != "" && !slices.Contains(words, w) {
					words = append(words, w)
				}
				start = i
			}
		}
	}
	return words
}

// textWords are the canonical words of a description.
func textWords(s string) []string {
	var words []string
	for _, t := range tokenize(s) {
		if (t.kind == tokWord || t.kind == tokOp) && t.canon != "" && !slices.Contains(words, t.canon) {
			words = append(words, t.canon)
		}
	}
	return words
}

// splitServer cuts a tool name as an agent offers it, "server/tool", into
// the server's part and the tool's own name. A name without "/" is all tool.
func splitServer(name string) (server, tool string) {
	if s, t, ok := strings.Cut(name, "/"); ok && s != "" && t != "" {
		return s, t
	}
	return "", name
}

// ownWords are the canonical words of a tool's own name, without its
// server's.
func ownWords(name string) []string {
	_, own := splitServer(name)
	return nameWords(own)
}

// toolWords are the canonical words of a tool's own name, and those of its
// description and its server's name that are not in it. The server's name
// weighs as the description does: every tool of a server called "files"
// has it, so it says nothing about which of them to call.
func toolWords(t Tool, s toolSchema) (name, desc []string) {
	server, _ := splitServer(t.Name)
	name = ownWords(t.Name)
	for _, w := range append(textWords(t.Description), nameWords(server)...) {
		if !slices.Contains(name, w) && !slices.Contains(desc, w) {
			desc = append(desc, w)
		}
	}
	for _, p := range s.props {
		if p.typ == "string" && pathish(p.name) && !slices.Contains(name, "file") && !slices.Contains(desc, "file") {
			desc = append(desc, "file")
		}
	}
	return name, desc
}

// score rates how well a tool matches the request: 3 for each word of its
// name in the request, 1 for each of its description, 10 when the request
// names it. It returns the words that matched.
func (q *query) score(t Tool) (int, []string) {
	name, desc := toolWords(t, parseSchema(t.Parameters))
	score := 0
	var matched []string
	for _, w := range name {
		if q.words[w] {
			score += 3
			matched = append(matched, w)
		}
	}
	for _, w := range desc {
		if q.words[w] {
			score++
			matched = append(matched, w)
		}
	}
	if mentions(q.text, t.Name) {
		score += 10
	}
	return score, matched
}

// mentions tells whether text names a tool, as a whole word.
func mentions(text, name string) bool {
	if len(name) < 3 {
		return false
	}
	text, name = strings.ToLower(text), strings.ToLower(name)
	for from := 0; ; {
		i := strings.Index(text[from:], name)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(name)
		before, after := ' ', ' '
		if start > 0 {
			before = rune(text[start-1])
		}
		if end < len(text) {
			after = rune(text[end])
		}
		if !isWordRune(before) && before != '_' && !isWordRune(after) && after != '_' {
			return true
		}
		from = start + 1
	}
}

// remainder is the text of the request that says more than which tool to
// use: the words after the first word that matches the tool (or else before
// it), without the values of the schema's enums and without fillers at
// either end; or, when a colon follows that word, the text after the colon
// as it is written. "echo hello world" gives "hello world", "what is the weather
// in Tokyo" gives "Tokyo".
func (q *query) remainder(t Tool, s toolSchema) string {
	name, desc := toolWords(t, s)
	enumValue := func(w string) bool {
		return slices.ContainsFunc(s.props, func(p schemaProp) bool {
			return slices.ContainsFunc(p.enum, func(v any) bool { e, ok := v.(string); return ok && strings.EqualFold(e, w) })
		})
	}
	at := -1
	for i, tok := range q.tokens {
		if tok.canon != "" && (slices.Contains(name, tok.canon) || slices.Contains(desc, tok.canon)) {
			at = i
			break
		}
	}
	words := func(toks []token) string {
		var out []string
		for _, tok := range toks {
			if tok.kind == tokWord && !enumValue(tok.text) {
				out = append(out, tok.text)
			}
		}
		for len(out) > 0 && stopwords[strings.ToLower(out[0])] {
			out = out[1:]
		}
		for len(out) > 0 && stopwords[strings.ToLower(out[len(out)-1])] {
			out = out[:len(out)-1]
		}
		return strings.Join(out, " ")
	}
	if at < 0 {
		return words(q.tokens)
	}
	if q.colonText != "" && at < q.colonAt {
		return q.colonText // the words after the colon, as they are written
	}
	if r := words(q.tokens[at+1:]); r != "" {
		return r
	}
	return words(q.tokens[:at])
}

// pathish tells a property that wants a filename.
func pathish(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"path", "file", "dir", "folder", "url", "uri"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
