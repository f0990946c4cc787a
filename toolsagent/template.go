package toolsagent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mew-protocol/mew/internal/clip"
)

// MaxPromptBytes bounds a filled prompt: a template that repeats a long
// value many times fails with ErrPromptTooLong instead of growing without
// bound.
const MaxPromptBytes = 1 << 20

// ErrPromptTooLong: the filled prompt would be longer than MaxPromptBytes.
var ErrPromptTooLong = errors.New("toolsagent: the filled prompt is longer than 1 MiB")

// template is a parsed prompt template: literal text and {name}
// placeholders. "{{" and "}}" stand for literal braces.
type template struct {
	segs []segment
}

// segment is literal text, or a placeholder when name is set.
type segment struct {
	text string
	name string
}

// names returns the placeholder names in order of first use.
func (t *template) names() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range t.segs {
		if s.name != "" && !seen[s.name] {
			seen[s.name] = true
			out = append(out, s.name)
		}
	}
	return out
}

// uses reports whether the template has the placeholder name.
func (t *template) uses(name string) bool {
	for _, s := range t.segs {
		if s.name == name {
			return true
		}
	}
	return false
}

// parseTemplate parses src. It returns a template even when src has
// errors (the faulty braces are kept as literal text), with a message for
// each error.
func parseTemplate(src string) (*template, []string) {
	t := &template{}
	var errs []string
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.segs = append(t.segs, segment{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(src); {
		switch c := src[i]; {
		case c == '{' && strings.HasPrefix(src[i:], "{{"):
			lit.WriteByte('{')
			i += 2
		case c == '}' && strings.HasPrefix(src[i:], "}}"):
			lit.WriteByte('}')
			i += 2
		case c == '}':
			errs = append(errs, fmt.Sprintf("a '}' without '{' %s: write }} for a literal brace", near(src, i)))
			lit.WriteByte('}')
			i++
		case c == '{':
			j := strings.IndexAny(src[i+1:], "{}")
			if j < 0 || src[i+1+j] != '}' {
				errs = append(errs, fmt.Sprintf("a '{' that is not closed %s: write {{ for a literal brace", near(src, i)))
				lit.WriteByte('{')
				i++
				continue
			}
			name := src[i+1 : i+1+j]
			if !plainName(name) {
				errs = append(errs, fmt.Sprintf("%s is not a placeholder (a name of letters, digits, '_', '-' and '.'): write {{ and }} for literal braces",
					clip.Mark("{"+name+"}", 40)))
				lit.WriteString(src[i : i+j+2])
			} else {
				flush()
				t.segs = append(t.segs, segment{name: name})
			}
			i += j + 2
		default:
			k := strings.IndexAny(src[i:], "{}")
			if k < 0 {
				k = len(src) - i
			}
			lit.WriteString(src[i : i+k])
			i += k
		}
	}
	flush()
	return t, errs
}

// near quotes the text around byte i of src, for a message.
func near(src string, i int) string {
	from, to := max(0, i-15), min(len(src), i+15)
	for from > 0 && src[from]&0xC0 == 0x80 {
		from--
	}
	for to < len(src) && src[to]&0xC0 == 0x80 {
		to++
	}
	return fmt.Sprintf("at byte %d (near %q)", i, src[from:to])
}

// render fills the template in one pass: each placeholder takes the text
// value returns for it, inserted as it is and never scanned again, so a
// value that contains "{x}" or "{{" stays as it is. It fails with
// ErrPromptTooLong past MaxPromptBytes.
func (t *template) render(value func(name string) string) (string, error) {
	var b strings.Builder
	for _, s := range t.segs {
		text := s.text
		if s.name != "" {
			text = value(s.name)
		}
		if b.Len()+len(text) > MaxPromptBytes {
			return "", ErrPromptTooLong
		}
		b.WriteString(text)
	}
	return b.String(), nil
}
