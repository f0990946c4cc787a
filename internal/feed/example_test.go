package feed_test

import (
	"encoding/json"
	"fmt"

	"github.com/mew-protocol/mew/internal/feed"
	"github.com/mew-protocol/mew/protocol"
)

// A client reads each envelope it receives and draws the events.
func ExampleReader_Read() {
	r := feed.NewReader()
	for _, s := range []string{
		`{"id":"q1","kind":"mcp/request","from":"bot","to":["calc"],"payload":{"method":"tools/call","params":{"name":"add","arguments":{"a":1}}}}`,
		`{"id":"a1","kind":"mcp/response","from":"calc","to":["bot"],"correlation_id":["q1"],"payload":{"result":{"content":[{"type":"text","text":"1"}]}}}`,
		`{"id":"e1","kind":"system/error","from":"bot","payload":{"error":"you are fired"}}`,
		`{"id":"c1","kind":"chat","from":"bot","payload":{"text":5}}`,
	} {
		var env protocol.Envelope
		if err := json.Unmarshal([]byte(s), &env); err != nil {
			panic(err)
		}
		for _, ev := range r.Read(&env) {
			switch ev := ev.(type) {
			case *feed.Request:
				fmt.Println("request", ev.ID, "calls", ev.Tool)
			case *feed.Response:
				fmt.Println("response answers", ev.Request)
			default:
				fmt.Println(ev.Type(), ev.Envelope().ID)
			}
		}
	}
	// Output:
	// request q1 calls calc/add
	// response answers q1
	// spoofed e1
	// malformed c1
}
