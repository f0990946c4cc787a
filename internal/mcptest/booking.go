package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BookSchema is the form the "book" tool of Booking requests: a name
// (required) and a number of seats (1 to 9, default 1).
const BookSchema = `{"type":"object","properties":{"name":{"type":"string","title":"Name"},"seats":{"type":"integer","title":"Seats","minimum":1,"maximum":9,"default":1}},"required":["name"]}`

// Booking returns a small server for the user interfaces' end-to-end
// tests: "book" elicits a form and answers "accept {json}", "decline" or
// "cancel"; "consent" elicits a URL (link) and answers the action;
// "picture" returns the RichContent.
func Booking(link string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "booking", Version: "1.0.0"}, nil)
	obj := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "book", Description: "Book seats: asks who travels", InputSchema: obj},
		askTool("who", &mcp.ElicitParams{Mode: "form", Message: "Who is travelling?", RequestedSchema: json.RawMessage(BookSchema)}))
	s.AddTool(&mcp.Tool{Name: "consent", Description: "Asks the user to open a link", InputSchema: obj},
		askTool("link", &mcp.ElicitParams{Mode: "url", Message: "Please give consent", URL: link, ElicitationID: "consent-1"}))
	s.AddTool(&mcp.Tool{Name: "picture", Description: "Returns a picture", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: RichContent()}, nil
		})
	return s
}

// RichContent is a result of every kind of content: a text, an image
// (Picture), audio, a resource link and an embedded resource.
func RichContent() []mcp.Content {
	size := int64(2048)
	return []mcp.Content{
		&mcp.TextContent{Text: "a red square"},
		&mcp.ImageContent{MIMEType: "image/png", Data: Picture()},
		&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF\x24\x00\x00\x00WAVEfmt ")},
		&mcp.ResourceLink{URI: "https://example.com/notes.txt", Name: "notes", MIMEType: "text/plain", Size: &size},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///square.txt", MIMEType: "text/plain", Text: "red"}},
	}
}

// Picture is a 16×16 red PNG.
func Picture() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for y := range 16 {
		for x := range 16 {
			img.Set(x, y, color.RGBA{R: 220, A: 255})
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img) // writing to memory cannot fail
	return b.Bytes()
}

type hugeIn struct {
	MB int `json:"mb" jsonschema:"how many MiB of text to answer"`
}

// addHugeTool adds "huge": a text of mb MiB, for the bridge's limit on
// what it reads.
func addHugeTool(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "huge", Description: "Answer mb MiB of text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in hugeIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(bytes.Repeat([]byte("x"), in.MB<<20))}}}, nil, nil
		})
}
