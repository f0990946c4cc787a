package lineclient_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/mew-protocol/mew/internal/lineclient"
)

// Run joins a space and reads the user's lines until /quit; `mew client
// connect --no-ui` calls it so. (Not run: it needs a gateway.)
func ExampleRun() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := lineclient.Run(ctx, lineclient.Options{
		Gateway: "ws://localhost:8080", Space: "demo", Token: os.Getenv("MEW_TOKEN"),
		HintAfter: lineclient.DefaultHintAfter,
		In:        os.Stdin, Out: os.Stdout, Err: os.Stderr,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}
