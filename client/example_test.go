package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/protocol"
)

// Example connects to a gateway, sends a chat message and prints it as the
// gateway relays it back: every participant, the sender included, sees what
// the space sees.
func Example() {
	addr, stop := exampleGateway() // serves the space "demo", where alice-token is alice's token
	defer stop()

	c, err := client.New(client.Options{
		Gateway: "ws://" + addr,
		Space:   "demo",
		Token:   "alice-token",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	echo := make(chan string, 1)
	c.OnKind(protocol.KindChat, func(env *protocol.Envelope) {
		var chat protocol.Chat
		if err := env.DecodePayload(&chat); err == nil {
			echo <- env.From + ": " + chat.Text
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("joined as", c.ID())

	env, err := protocol.New(protocol.KindChat, protocol.Chat{Text: "hello, space"})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Send(ctx, env); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-echo)
	// Output:
	// joined as alice
	// alice: hello, space
}

// ExampleClient_OnStateChange shows the states a connection goes through.
func ExampleClient_OnStateChange() {
	addr, stop := exampleGateway()
	defer stop()

	c, err := client.New(client.Options{Gateway: "ws://" + addr, Space: "demo", Token: "alice-token"})
	if err != nil {
		log.Fatal(err)
	}
	c.OnStateChange(func(s client.State) { fmt.Println(s) })
	if err := c.Connect(context.Background()); err != nil {
		log.Fatal(err)
	}
	for c.State() != client.Ready {
		time.Sleep(time.Millisecond)
	}
	c.Close() // runs the handlers for what happened before it returns
	// Output:
	// connecting
	// connected
	// joined
	// ready
	// disconnected
}

// ExampleRefusedError shows how a refused join reads.
func ExampleRefusedError() {
	addr, stop := exampleGateway()
	defer stop()

	c, err := client.New(client.Options{Gateway: "ws://" + addr, Space: "demo", Token: "not-a-token"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	err = c.Connect(context.Background())
	var refused *client.RefusedError
	if errors.As(err, &refused) {
		fmt.Println("refused:", refused.Code)
	}
	fmt.Println(errors.Is(err, client.ErrRefused))
	// Output:
	// refused: unauthorized
	// true
}

// exampleGateway starts a gateway for a space "demo" on a free port of
// 127.0.0.1 and returns its address and a function that stops it.
func exampleGateway() (addr string, stop func()) {
	dir, err := os.MkdirTemp("", "mew-client-example")
	if err != nil {
		log.Fatal(err)
	}
	s, err := testutil.Serve(dir, `
space: {id: demo}
participants:
  alice: {tokens: [alice-token], capabilities: [{kind: "*"}]}
`, gateway.Options{Audit: gateway.AuditOptions{Off: true}})
	if err != nil {
		log.Fatal(err)
	}
	return s.Addr, func() {
		_ = s.Stop()
		_ = os.RemoveAll(dir)
	}
}
