package protocol

import (
	"reflect"
	"strings"
	"sync"

	"github.com/mew-protocol/mew/internal/jsontape"
)

// memberNames caches, per struct type, the JSON names of its fields.
var memberNames sync.Map // reflect.Type → []string

// fieldNames returns the JSON member names of the struct v points to, or nil
// when v is not a pointer to a struct.
func fieldNames(v any) []string {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	t = t.Elem()
	if names, ok := memberNames.Load(t); ok {
		return names.([]string)
	}
	var names []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names = append(names, name)
	}
	memberNames.Store(t, names)
	return names
}

// checkMemberCase refuses a payload with a top-level member whose name
// differs only in case from one of v's fields: encoding/json would read it
// as that field, a strict reader would not.
func checkMemberCase(payload []byte, v any) error {
	names := fieldNames(v)
	if len(names) == 0 {
		return nil
	}
	d := getDecoder()
	defer putDecoder(d)
	t := &d.tape
	defer func() { t.Src = nil }()
	if t.Parse(payload) != nil || t.Nodes[0].Kind != jsontape.Object {
		return nil // json.Unmarshal will say what is wrong
	}
	for k := uint32(1); k < t.Nodes[0].Next; k = t.Nodes[k+1].Next {
		key := t.Text(k)
		for _, name := range names {
			if len(key) == len(name) && string(key) != name && strings.EqualFold(string(key), name) {
				return fieldErr("payload."+string(key), ErrBadType, "member names are case-sensitive: want "+name)
			}
		}
	}
	return nil
}
