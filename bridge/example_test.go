package bridge_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/bridge"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/mcptest"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
)

// An MCP server joins a space as the participant "files", and a human
// calls one of its tools. The server here is served over streamable HTTP;
// a command (Server.Command, Args, Env, Dir) is bridged the same way.
func Example() {
	mcpServer := httptest.NewServer(mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return mcptest.New(nil) }, nil))
	defer mcpServer.Close()

	dir, err := os.MkdirTemp("", "bridge-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	gw, err := testutil.Serve(dir, `
space: {id: example}
participants:
  files:
    tokens: [files-token]
    capabilities: [{kind: mcp/response}, {kind: participant/status}]
  human:
    tokens: [human-token]
    capabilities: [{kind: "*"}]
`, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	if err != nil {
		log.Fatal(err)
	}
	defer gw.Stop()

	b, err := bridge.New(bridge.Options{
		Participant: participant.Options{Client: client.Options{Gateway: "ws://" + gw.Addr, Space: "example", Token: "files-token"}},
		Server:      bridge.Server{URL: mcpServer.URL},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	<-b.Ready()

	human, err := participant.New(participant.Options{Client: client.Options{Gateway: "ws://" + gw.Addr, Space: "example", Token: "human-token"}})
	if err != nil {
		log.Fatal(err)
	}
	if err := human.Connect(ctx); err != nil {
		log.Fatal(err)
	}
	result, err := human.Request(ctx, "files", map[string]any{
		"method": "tools/call",
		"params": map[string]any{"name": "echo", "arguments": map[string]any{"text": "hello through the bridge"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(result))

	_ = human.Close()
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output: {"content":[{"type":"text","text":"hello through the bridge"}]}
}
