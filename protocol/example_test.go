package protocol_test

import (
	"errors"
	"fmt"

	"github.com/mew-protocol/mew/protocol"
)

func ExampleNew() {
	env, err := protocol.New(protocol.KindChat, protocol.Chat{Text: "Hello <everyone>!"})
	if err != nil {
		panic(err)
	}
	// The sender fills these when it sends.
	env.ID = "env-chat-1"
	env.TS = "2025-08-26T14:00:00Z"
	env.From = "user-alice"
	if err := env.ValidateComplete(); err != nil {
		panic(err)
	}
	fmt.Println(string(env.AppendJSON(nil)))
	// Output:
	// {"protocol":"mew/v0.4","id":"env-chat-1","ts":"2025-08-26T14:00:00Z","from":"user-alice","kind":"chat","payload":{"text":"Hello <everyone>!"}}
}

func ExampleDecoder_Decode() {
	// One Decoder per connection; one Envelope reused for each message.
	var dec protocol.Decoder
	var env protocol.Envelope
	for _, msg := range []string{
		`{"protocol":"mew/v0.4","id":"m1","from":"alice","kind":"chat","payload":{"text":"hi bob"},"x-client":"tui"}`,
		`{"kind":"mcp/response","correlation_id":42}`,
		`{"kind":"chat","payload":{"format":"plain"}}`,
	} {
		if err := dec.Decode([]byte(msg), &env); err != nil {
			fmt.Println("refused:", err, errors.Is(err, protocol.ErrCorrelationNotArray))
			continue
		}
		if err := env.Validate(); err != nil {
			fmt.Println("invalid:", err)
			continue
		}
		var chat protocol.Chat
		if err := env.DecodePayload(&chat); err != nil {
			panic(err)
		}
		fmt.Printf("%s says %q (extra: %s=%s)\n", env.From, chat.Text, env.Extra[0].Name, env.Extra[0].Value)
	}
	// Output:
	// alice says "hi bob" (extra: x-client="tui")
	// refused: invalid envelope: correlation_id: correlation_id must be an array of strings (got number) true
	// invalid: invalid envelope: payload.text: required field is missing
}

func ExampleParseFrame() {
	frame := protocol.AppendFrame(nil, "stream-1", []byte(`{"type":"token","text":"#1"}`))
	id, data, err := protocol.ParseFrame(frame)
	fmt.Println(string(id), string(data), err)
	_, _, err = protocol.ParseFrame([]byte("##x"))
	fmt.Println(err)
	// Output:
	// stream-1 {"type":"token","text":"#1"} <nil>
	// empty stream id
}
