package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/summary"
)

// contentItem is the part of an MCP content item the transcript reads:
// text, image and audio (base64 data and a MIME type), resource_link (a
// URI, a name, maybe a size) and resource (an embedded resource's
// contents, text or base64 blob).
type contentItem struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MIMEType string `json:"mimeType"`
	URI      string `json:"uri"`
	Name     string `json:"name"`
	Size     *int64 `json:"size"`
	Resource *struct {
		URI      string  `json:"uri"`
		MIMEType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     string  `json:"blob"`
	} `json:"resource"`
}

// resultText summarises an MCP result for the transcript: its texts, one
// a line, and each other item as a placeholder that says what it is
// ("[image image/png 1.2 KB]"), since a terminal shows no picture; a
// result without content as compact JSON (summary.Result).
func resultText(raw json.RawMessage) string {
	var r struct {
		Content []contentItem `json:"content"`
	}
	if json.Unmarshal(raw, &r) != nil || len(r.Content) == 0 {
		text, _ := summary.Result(raw)
		return clip.Runes(text, 2000)
	}
	lines := make([]string, 0, len(r.Content))
	for _, c := range r.Content {
		lines = append(lines, c.placeholder())
	}
	return clip.Runes(strings.Join(lines, "\n"), 2000)
}

// placeholder is the item's text, or what stands for it.
func (c *contentItem) placeholder() string {
	switch c.Type {
	case "text":
		return c.Text
	case "image", "audio":
		return "[" + c.Type + " " + mimeOr(c.MIMEType) + " " + byteSize(base64Len(c.Data)) + "]"
	case "resource_link":
		s := "[link " + clip.Runes(c.URI, 200)
		if c.Name != "" && c.Name != c.URI {
			s += " (" + clip.Runes(c.Name, 80) + ")"
		}
		if c.MIMEType != "" {
			s += " " + clip.Runes(c.MIMEType, 60)
		}
		if c.Size != nil && *c.Size >= 0 {
			s += " " + byteSize(*c.Size)
		}
		return s + "]"
	case "resource":
		if c.Resource == nil {
			return "[resource]"
		}
		res := c.Resource
		n := base64Len(res.Blob)
		if res.Text != nil {
			n = int64(len(*res.Text))
		}
		return "[resource " + clip.Runes(res.URI, 200) + " " + mimeOr(res.MIMEType) + " " + byteSize(n) + "]"
	}
	return "[" + clip.Runes(c.Type, 40) + "]"
}

func mimeOr(m string) string {
	if m == "" {
		return "(no type)"
	}
	return clip.Runes(m, 60)
}

// base64Len is the length of what standard base64 s decodes to.
func base64Len(s string) int64 {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	return int64(len(s)) * 3 / 4
}

// byteSize writes n bytes as a person reads them: "512 B", "1.2 KB",
// "3.4 MB".
func byteSize(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f KB", float64(n)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1000/1000)
}
