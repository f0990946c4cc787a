package auditlog_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/mew-protocol/mew/auditlog"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// A gateway writes its audit log; the reader verifies it, finds a chat and
// explains it.
func Example() {
	dir, _ := os.MkdirTemp("", "auditlog-example")
	defer os.RemoveAll(dir)
	s, err := testutil.Serve(dir, "space: {id: ex}\nparticipants:\n  alice: {tokens: [t], capabilities: [{kind: chat}]}\n", gateway.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.Addr+"/participants/alice/messages?space=ex",
		strings.NewReader(`{"id":"hello","kind":"chat","payload":{"text":"hi"}}`))
	req.Header.Set("Authorization", "Bearer t")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	_ = s.Stop()
	logs := filepath.Join(dir, ".mew", "logs")

	rep, _ := auditlog.Verify(logs, auditlog.VerifyOptions{})
	fmt.Println("intact:", rep.Intact())

	q := auditlog.Query{Kind: "chat", Events: []string{auditlog.Received}}
	_, _ = auditlog.Scan(ctx, logs, auditlog.EnvelopeHistory, auditlog.ReadOptions{}, func(r *auditlog.Record) error {
		if q.Match(r) {
			fmt.Println(r.Event, r.ID, auditlog.Describe(r.Decoded()))
		}
		return nil
	})

	ix, _ := auditlog.BuildIndex(ctx, logs, auditlog.IndexOptions{})
	n, _ := ix.Lineage("hello")
	fmt.Println(n.Children[0].Relation, n.Children[0].Text)
	// Output:
	// intact: true
	// received hello hi
	// admitted_by {"kind":"chat"} (a capability of alice in the space config)
}
