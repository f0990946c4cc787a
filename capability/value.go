package capability

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/mew-protocol/mew/internal/jsontape"
)

type valueKind uint8

const (
	vAny    valueKind = iota // "*"
	vString                  // an exact string
	vGlob                    // a path glob
	vRegex                   // "/re/"
	vNot                     // "!p": a string p does not match
	vNumber
	vTrue
	vFalse
	vNull
	vOneOf  // an array: any item
	vObject // a payload pattern
)

// valuePat is a compiled value pattern.
type valuePat struct {
	kind  valueKind
	str   string // the string, or a number's canonical spelling
	text  string // a number as written, for messages
	glob  *glob
	re    *regexp.Regexp
	not   *valuePat // vNot: a vString or vGlob
	items []valuePat
	obj   *objectPat
}

type memberKind uint8

const (
	mKey      memberKind = iota // a plain member name
	mKeyGlob                    // member names matching a glob
	mDeep                       // "**": anywhere in the object
	mJSONPath                   // "$...": the values a path selects
)

// objectPat is a compiled payload pattern: every member must match.
type objectPat struct {
	members []memberPat
}

type memberPat struct {
	kind  memberKind
	key   string
	glob  *glob
	path  *jsonPath
	value valuePat
}

// compiler turns the tape of a pattern into compiled patterns, tracking the
// path for error messages.
type compiler struct {
	t *jsontape.Tape
}

func (c *compiler) value(i uint32, path string) (valuePat, error) {
	t := c.t
	switch n := t.Nodes[i]; n.Kind {
	case jsontape.String:
		return compileString(t.String(i), path)
	case jsontape.Number:
		// Numbers compare by exact decimal value, in their canonical spelling.
		return valuePat{kind: vNumber, str: string(jsontape.AppendNormalNumber(nil, t.Raw(i))), text: string(t.Raw(i))}, nil
	case jsontape.True:
		return valuePat{kind: vTrue}, nil
	case jsontape.False:
		return valuePat{kind: vFalse}, nil
	case jsontape.Null:
		return valuePat{kind: vNull}, nil
	case jsontape.Array:
		p := valuePat{kind: vOneOf}
		k := 0
		for e := i + 1; e < n.Next; e = t.Nodes[e].Next {
			item, err := c.value(e, fmt.Sprintf("%s[%d]", path, k))
			if err != nil {
				return valuePat{}, err
			}
			p.items = append(p.items, item)
			k++
		}
		return p, nil
	default: // Object
		obj, err := c.object(i, path)
		if err != nil {
			return valuePat{}, err
		}
		return valuePat{kind: vObject, obj: obj}, nil
	}
}

func (c *compiler) object(i uint32, path string) (*objectPat, error) {
	t := c.t
	obj := &objectPat{}
	for k := i + 1; k < t.Nodes[i].Next; k = t.Nodes[k+1].Next {
		key := t.String(k)
		mpath := path + "." + key
		var m memberPat
		switch {
		case strings.HasPrefix(key, "$"):
			jp, err := compileJSONPath(key)
			if err != nil {
				return nil, &CompileError{Path: mpath, Err: ErrBadJSONPath, Detail: err.Error()}
			}
			m = memberPat{kind: mJSONPath, key: key, path: jp}
		case key == "**":
			m = memberPat{kind: mDeep, key: key}
		case isGlob(key):
			m = memberPat{kind: mKeyGlob, key: key, glob: compileGlob(key)}
		default:
			m = memberPat{kind: mKey, key: key}
		}
		v, err := c.value(k+1, mpath)
		if err != nil {
			return nil, err
		}
		m.value = v
		obj.members = append(obj.members, m)
	}
	return obj, nil
}

// compileString compiles a string value pattern.
func compileString(s, path string) (valuePat, error) {
	switch {
	case s == "*":
		return valuePat{kind: vAny}, nil
	case len(s) >= 2 && s[0] == '/' && s[len(s)-1] == '/':
		re, err := regexp.Compile(s[1 : len(s)-1])
		if err != nil {
			return valuePat{}, &CompileError{Path: path, Err: ErrBadRegex, Detail: err.Error()}
		}
		return valuePat{kind: vRegex, str: s, re: re}, nil
	case strings.HasPrefix(s, "!"):
		inner := s[1:]
		p := valuePat{kind: vString, str: inner}
		if isGlob(inner) {
			p = valuePat{kind: vGlob, str: inner, glob: compileGlob(inner)}
		}
		return valuePat{kind: vNot, str: s, not: &p}, nil
	case isGlob(s):
		return valuePat{kind: vGlob, str: s, glob: compileGlob(s)}, nil
	}
	return valuePat{kind: vString, str: s}, nil
}

// matchString matches p against a string that is not on a tape (the kind).
func (p *valuePat) matchString(s string) bool {
	switch p.kind {
	case vAny:
		return true
	case vString:
		return s == p.str
	case vGlob:
		return p.glob.match(s)
	case vRegex:
		return p.re.MatchString(s)
	case vNot:
		return !p.not.matchString(s)
	case vOneOf:
		for i := range p.items {
			if p.items[i].matchString(s) {
				return true
			}
		}
	}
	return false
}
