package capability

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mew-protocol/mew/internal/jsontape"
)

// Annotations lists the top-level members a capability may carry beside kind
// and payload. They describe a pattern for people (the reference gateway adds
// {"id":"mcp-response",...}, space files use descriptions) and never change
// what it allows. Any other member, a case variant of kind or payload
// included, is a compile error: a reader that matched names loosely would see
// a different pattern from the one enforced.
var Annotations = []string{"id", "name", "description", "note", "comment"}

// checkMembers refuses top-level members that are neither kind, to, payload
// nor an annotation.
func checkMembers(t *jsontape.Tape, path string) error {
	for k := uint32(1); k < t.Nodes[0].Next; k = t.Nodes[k+1].Next {
		key := t.String(k)
		if key == "kind" || key == "payload" || key == "to" || slices.Contains(Annotations, key) {
			continue
		}
		detail := fmt.Sprintf("%q: a capability has kind, to, payload and the annotations %s", key, strings.Join(Annotations, ", "))
		if strings.EqualFold(key, "kind") || strings.EqualFold(key, "payload") || strings.EqualFold(key, "to") {
			detail += " (member names are case-sensitive)"
		}
		return &CompileError{Path: path + memberPath(key), Err: ErrUnknownMember, Detail: detail}
	}
	return nil
}

// parseError turns a parse failure of a pattern into a CompileError; for a
// duplicate key it names the path of the second occurrence.
func parseError(raw []byte, path string, err error) error {
	var se *jsontape.SyntaxError
	if errors.Is(err, jsontape.ErrDuplicateKey) && errors.As(err, &se) {
		return &CompileError{Path: path + keyPathAt(raw, se.Offset), Err: ErrDuplicateKey,
			Detail: "a key may appear only once in an object (" + err.Error() + ")"}
	}
	return &CompileError{Path: path, Err: ErrInvalidPattern, Detail: err.Error()}
}

// memberPath renders one step into an object for error paths, as the
// compiler's own paths do.
func memberPath(key string) string { return "." + key }

// keyPathAt returns the path (".payload.params.name") of the object key whose
// opening quote is at offset off of raw, or "" when there is none. It only
// serves error messages: the parser that rejected raw reports an offset, and
// a token scan up to it is enough to name the place.
func keyPathAt(raw []byte, off int) string {
	type frame struct {
		obj     bool
		wantKey bool
		key     string
		idx     int
	}
	var stack []frame
	done := func() { // a value ended in the innermost container
		if n := len(stack); n > 0 {
			if stack[n-1].obj {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].idx++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				stack = append(stack, frame{obj: v == '{', wantKey: v == '{'})
			default:
				stack = stack[:len(stack)-1]
				done()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
				if int(dec.InputOffset()) > off {
					var b strings.Builder
					for _, f := range stack[:n-1] {
						if f.obj {
							b.WriteString(memberPath(f.key))
						} else {
							fmt.Fprintf(&b, "[%d]", f.idx)
						}
					}
					b.WriteString(memberPath(v))
					return b.String()
				}
				stack[n-1].key, stack[n-1].wantKey = v, false
				continue
			}
			done()
		default:
			done()
		}
	}
}
