package protocol

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// marshalWithExtra encodes the struct known, then appends the members of extra
// that known does not define, in key order (maps have none of their own; a
// fixed order keeps the encoding deterministic).
func marshalWithExtra(known any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := Marshal(known)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	names := jsonNames(reflect.TypeOf(known))
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if _, ok := names[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := b[:len(b)-1] // drop '}'
	for _, k := range keys {
		v := extra[k]
		if len(v) == 0 {
			v = json.RawMessage("null")
		} else if !json.Valid(v) {
			return nil, fmt.Errorf("protocol: extra member %q: %w", k, ErrBadJSON)
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = appendRaw(append(appendString(out, k), ':'), v)
	}
	return append(out, '}'), nil
}

// unmarshalWithExtra decodes data into the struct pointer p and returns the
// members p's type does not define.
func unmarshalWithExtra(data []byte, p any) (map[string]json.RawMessage, error) {
	if err := json.Unmarshal(data, p); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	for name := range jsonNames(reflect.TypeOf(p).Elem()) {
		delete(all, name)
	}
	if len(all) == 0 {
		return nil, nil
	}
	return all, nil
}

var namesCache sync.Map // reflect.Type → map[string]struct{}

// jsonNames returns the JSON member names of struct type t's fields.
func jsonNames(t reflect.Type) map[string]struct{} {
	if v, ok := namesCache.Load(t); ok {
		return v.(map[string]struct{})
	}
	names := make(map[string]struct{})
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		names[name] = struct{}{}
	}
	namesCache.Store(t, names)
	return names
}
