package studio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/internal/yamlx"
	"github.com/mew-protocol/mew/toolsagent"
)

// docLimits bound a definition file's YAML, as generously as the loader's
// own limits (it checks the result again).
var docLimits = yamlx.Limits{Depth: 64, Nodes: 100_000, Bytes: 4 * toolsagent.MaxFileBytes, Indicators: 1 << 18}

// readFile reads the definition file, bounded by toolsagent.MaxFileBytes.
func readFile(path string) ([]byte, os.FileMode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("studio: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("studio: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("studio: %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, toolsagent.MaxFileBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("studio: %s: %w", path, err)
	}
	if len(data) > toolsagent.MaxFileBytes {
		return nil, 0, fmt.Errorf("studio: %s is larger than %d bytes", path, toolsagent.MaxFileBytes)
	}
	return data, st.Mode().Perm(), nil
}

// document is a definition file as YAML nodes, for editing in place.
type document struct {
	root *yaml.Node // the document node
	json bool       // written as JSON (a .json file)
	src  []byte     // the file as read: what encode keeps outside the tools
}

// parseDocument decodes a definition file whose root is a mapping.
func parseDocument(path string, data []byte) (*document, error) {
	doc, err := yamlx.Decode(data, docLimits, true)
	if err != nil {
		return nil, fmt.Errorf("studio: %s: %w", path, err)
	}
	if doc == nil || len(doc.Content) == 0 {
		// An empty file: start a definition.
		doc = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	if doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("studio: %s: the definition must be a mapping, got %s", path, yamlx.DescribeKind(doc.Content[0]))
	}
	return &document{root: doc, json: strings.EqualFold(filepath.Ext(path), ".json"), src: data}, nil
}

// top returns the value of key in the root mapping, or nil.
func (d *document) top(key string) *yaml.Node {
	m := d.root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// toolsJSON returns the tools as written in the file, as JSON: what the
// page edits. A file without tools gives an empty list.
func (d *document) toolsJSON() (json.RawMessage, error) {
	n := d.top("tools")
	if n == nil || yamlx.IsNull(n) {
		return json.RawMessage("[]"), nil
	}
	b, err := yamlx.AppendJSON(nil, n, "tools")
	if err != nil {
		return nil, fmt.Errorf("studio: %w", err)
	}
	if len(b) == 0 || b[0] != '[' {
		return nil, errors.New("studio: tools: want a list")
	}
	return b, nil
}

// setTools replaces the tools with the page's, a JSON array of tool
// objects. A tool keeps its node (and so its comments and x- keys) when
// the page has a tool of the same name, or, renamed, at the same place.
func (d *document) setTools(tools json.RawMessage) error {
	var fresh yaml.Node
	if err := yaml.Unmarshal(tools, &fresh); err != nil {
		return fmt.Errorf("studio: tools: %w", err)
	}
	if len(fresh.Content) != 1 || fresh.Content[0].Kind != yaml.SequenceNode {
		return errors.New("studio: tools: want a JSON array")
	}
	if depth(fresh.Content[0], 0) > docLimits.Depth {
		return fmt.Errorf("studio: tools: nested deeper than %d levels", docLimits.Depth)
	}
	items := fresh.Content[0].Content
	for _, it := range items {
		if it.Kind != yaml.MappingNode {
			return errors.New("studio: tools: each tool is a JSON object")
		}
		blockStyle(it)
	}
	old := d.top("tools")
	if old == nil {
		m := d.root.Content[0]
		old = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "tools"}, old)
	}
	if old.Kind != yaml.SequenceNode {
		// An alias or a scalar: nothing to keep.
		*old = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", HeadComment: old.HeadComment, LineComment: old.LineComment}
	}
	old.Style &^= yaml.FlowStyle
	newNames := make([]string, len(items))
	for i, it := range items {
		newNames[i] = mapValue(it, "name")
	}
	used := make([]bool, len(old.Content))
	pick := func(i int) *yaml.Node {
		for j, o := range old.Content {
			if !used[j] && o.Kind == yaml.MappingNode && mapValue(o, "name") == newNames[i] && newNames[i] != "" {
				used[j] = true
				return o
			}
		}
		if i < len(old.Content) && !used[i] && old.Content[i].Kind == yaml.MappingNode && !slices.Contains(newNames, mapValue(old.Content[i], "name")) {
			used[i] = true
			return old.Content[i]
		}
		return nil
	}
	out := make([]*yaml.Node, len(items))
	for i, it := range items {
		if o := pick(i); o != nil {
			merge(o, it)
			out[i] = o
		} else {
			out[i] = it
		}
	}
	old.Content = out
	return nil
}

// depth returns how deep n nests, from d, stopping past the limit.
func depth(n *yaml.Node, d int) int {
	deepest := d
	if d > docLimits.Depth {
		return d
	}
	for _, c := range n.Content {
		deepest = max(deepest, depth(c, d+1))
	}
	return deepest
}

// mapValue returns the scalar value of key in mapping m, or "".
func mapValue(m *yaml.Node, key string) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.ScalarNode {
			return m.Content[i+1].Value
		}
	}
	return ""
}

// blockStyle makes nodes decoded from JSON print as block YAML: no flow
// style, no quotes the encoder does not need, and a literal block for a
// text of several lines.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && strings.Contains(n.Value, "\n") {
		n.Style = yaml.LiteralStyle
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// merge makes dst hold src's value while keeping dst's comments: mapping
// keys present in both are merged, keys src lacks are dropped (except
// x- keys, which the page does not edit), new keys are appended.
func merge(dst, src *yaml.Node) {
	if dst.Kind != src.Kind || dst.Kind == yaml.AliasNode || dst.Kind == yaml.DocumentNode {
		head, line, foot := dst.HeadComment, dst.LineComment, dst.FootComment
		*dst = *src
		dst.HeadComment, dst.LineComment, dst.FootComment = head, line, foot
		return
	}
	switch dst.Kind {
	case yaml.ScalarNode:
		if dst.Value == src.Value && dst.Tag == src.Tag {
			return // unchanged: keep how the file writes it
		}
		dst.Value, dst.Tag = src.Value, src.Tag
		if dst.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 || !strings.Contains(src.Value, "\n") {
			dst.Style = src.Style
		}
	case yaml.SequenceNode:
		for i, s := range src.Content {
			if i < len(dst.Content) {
				merge(dst.Content[i], s)
			} else {
				dst.Content = append(dst.Content, s)
			}
		}
		dst.Content = dst.Content[:len(src.Content)]
	case yaml.MappingNode:
		var out []*yaml.Node
		srcKeys := map[string]*yaml.Node{}
		for i := 0; i+1 < len(src.Content); i += 2 {
			srcKeys[src.Content[i].Value] = src.Content[i+1]
		}
		kept := map[string]bool{}
		for i := 0; i+1 < len(dst.Content); i += 2 {
			k, v := dst.Content[i], dst.Content[i+1]
			if sv, ok := srcKeys[k.Value]; ok {
				merge(v, sv)
				out = append(out, k, v)
				kept[k.Value] = true
			} else if strings.HasPrefix(k.Value, "x-") {
				out = append(out, k, v)
			}
		}
		for i := 0; i+1 < len(src.Content); i += 2 {
			if !kept[src.Content[i].Value] {
				out = append(out, src.Content[i], src.Content[i+1])
			}
		}
		dst.Content = out
	}
}

// encode writes the document: YAML with two-space indentation, or indented
// JSON for a .json file.
func (d *document) encode() ([]byte, error) {
	if d.json {
		b, err := yamlx.AppendJSON(nil, d.root.Content[0], "")
		if err != nil {
			return nil, fmt.Errorf("studio: %w", err)
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, b, "", "  "); err != nil {
			return nil, fmt.Errorf("studio: %w", err)
		}
		buf.WriteByte('\n')
		if buf.Len() > toolsagent.MaxFileBytes {
			return nil, fmt.Errorf("studio: %w", errTooLarge)
		}
		return buf.Bytes(), nil
	}
	if out, ok := d.splice(); ok {
		if len(out) > toolsagent.MaxFileBytes {
			return nil, fmt.Errorf("studio: %w", errTooLarge)
		}
		return out, nil
	}
	return d.encodeNode(d.root)
}

// encodeNode writes n as YAML, indented by two, within the loader's size.
func (d *document) encodeNode(n *yaml.Node) ([]byte, error) {
	// Indentation grows with depth: stop at the loader's bound rather than
	// write megabytes it would refuse.
	buf := &capped{max: toolsagent.MaxFileBytes}
	enc := yaml.NewEncoder(buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("studio: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("studio: %w", err)
	}
	return buf.Bytes(), nil
}

// splice writes the file as the person wrote it, but for the tools: the
// lines of the top-level tools entry are replaced by the tools encoded
// anew, and every other line — other keys, comments, quoting, blank lines,
// indentation — stays byte for byte. It reports false where the file does
// not lend itself (no tools entry yet, a flow-style document, tools on the
// last line of another construct), and encode writes the whole document.
func (d *document) splice() ([]byte, bool) {
	m := d.root.Content[0]
	if len(d.src) == 0 || m.Style&yaml.FlowStyle != 0 {
		return nil, false
	}
	k := -1
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "tools" {
			k = i
		}
	}
	if k < 0 || m.Content[k].Column != 1 {
		return nil, false
	}
	lines := strings.SplitAfter(string(d.src), "\n")
	first := m.Content[k].Line - 1 // 0-based: the tools key's line
	end := len(lines)              // the first line after the tools entry
	if k+2 < len(m.Content) {
		next := m.Content[k+2]
		end = next.Line - 1 - strings.Count(next.HeadComment, "\n") - boolInt(next.HeadComment != "")
		// Blank lines before the next key (or its comment) stay its.
		for end > first+1 && strings.TrimSpace(lines[end-1]) == "" {
			end--
		}
	}
	if first < 0 || first >= len(lines) || end <= first || end > len(lines) {
		return nil, false
	}
	// A head comment of the tools key itself sits above its line and
	// stays; its own comments are kept by the encoder from the nodes.
	key, val := *m.Content[k], *m.Content[k+1]
	key.HeadComment = ""
	block, err := d.encodeNode(&yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{&key, &val}})
	if err != nil {
		return nil, false
	}
	var out strings.Builder
	for _, l := range lines[:first] {
		out.WriteString(l)
	}
	out.Write(block)
	for _, l := range lines[end:] {
		out.WriteString(l)
	}
	return []byte(out.String()), true
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// errTooLarge: the file would be larger than the loader reads.
var errTooLarge = fmt.Errorf("the file would be larger than %d bytes", toolsagent.MaxFileBytes)

// capped is a buffer that refuses to grow past max bytes.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if c.Len()+len(p) > c.max {
		return 0, errTooLarge
	}
	return c.Buffer.Write(p)
}

// writeFile replaces path with data: a temporary file in the same
// directory, with mode, synced, then renamed over it, so that a reader
// sees the old file or the new one and never half of one.
func writeFile(path string, data []byte, mode os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".studio-*")
	if err != nil {
		return fmt.Errorf("studio: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("studio: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("studio: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("studio: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("studio: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("studio: %w", err)
	}
	return nil
}
