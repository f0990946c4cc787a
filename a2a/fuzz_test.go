package a2a

import (
	"encoding/json"
	"testing"
)

// FuzzParseRequest feeds arbitrary bodies to the request parser and the
// params decoding of every method: no input may panic, every refusal has
// a JSON-RPC code, and a message that passes the checks survives a round
// trip through JSON with its parts intact.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"GetTask","params":{"id":"t","historyLength":-1}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0"}]`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":{},"method":"x"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := parseRequest(body)
		if e != nil {
			if e.Code > -32000 || e.Code < -32700 || req.ID == nil {
				t.Fatalf("refusal %+v with id %s", e, req.ID)
			}
			return
		}
		var send SendMessageRequest
		if decodeParams(req.Params, &send) == nil && send.Message != nil {
			s := &Server{opts: Options{}}
			if s.checkMessage(send.Message) == nil {
				b, err := json.Marshal(send.Message)
				if err != nil {
					t.Fatalf("a checked message does not encode: %v", err)
				}
				var back Message
				if err := json.Unmarshal(b, &back); err != nil {
					t.Fatalf("a checked message does not decode: %v\n%s", err, b)
				}
				if len(back.Parts) != len(send.Message.Parts) {
					t.Fatalf("parts: %d, then %d", len(send.Message.Parts), len(back.Parts))
				}
				for i := range back.Parts {
					if back.Parts[i].Kind() != send.Message.Parts[i].Kind() {
						t.Fatalf("part %d: %s, then %s", i, send.Message.Parts[i].Kind(), back.Parts[i].Kind())
					}
				}
			}
		}
		for _, v := range []any{&GetTaskRequest{}, &ListTasksRequest{}, &CancelTaskRequest{}, &SubscribeToTaskRequest{}} {
			_ = decodeParams(req.Params, v)
		}
	})
}
