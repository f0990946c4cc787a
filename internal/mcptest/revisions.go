package mcptest

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/mcpver"
)

// CheckRevisions connects to a server of mew's once per revision a client
// may offer, each time over a new transport from connect, and checks what
// the MCP lifecycle says the server must agree to: every revision mew speaks
// as it is (2026-07-28 through server/discover, the others through
// initialize), an unknown newer revision as the newest stateless one (the
// server refuses it, listing what it speaks, and the client asks again), and
// an unknown older one through initialize as mcpver.LatestSession. Each
// session lists the tools, which must include tool.
func CheckRevisions(t *testing.T, connect func(t *testing.T) mcp.Transport, tool string) {
	t.Helper()
	cases := map[string]string{"2099-01-01": mcpver.Stateless, "2024-01-01": mcpver.LatestSession}
	for _, v := range mcpver.Supported() {
		cases[v] = v
	}
	for offered, want := range cases {
		t.Run(offered, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "revisions-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, connect(t), &mcp.ClientSessionOptions{ProtocolVersion: offered})
			if err != nil {
				t.Fatalf("offering %s: %v", offered, err)
			}
			defer func() { _ = cs.Close() }()
			if got := cs.InitializeResult().ProtocolVersion; got != want {
				t.Errorf("offering %s: agreed on %s, want %s", offered, got, want)
			}
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("offering %s: tools/list: %v", offered, err)
			}
			found := false
			for _, tl := range res.Tools {
				found = found || tl.Name == tool
			}
			if !found {
				t.Errorf("offering %s: tools/list has no %s", offered, tool)
			}
		})
	}
}
