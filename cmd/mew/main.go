// Command mew is the MEW Protocol gateway, SDK tooling and terminal client in one binary.
// The commands themselves live in internal/cli; this file only wires them to the process.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mew-protocol/mew/internal/cli"
)

// version is set at link time: go build -ldflags "-X main.version=v0.1.0" ./cmd/mew.
// When empty, internal/cli falls back to the module version recorded in the binary.
var version string

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root := cli.NewRoot(cli.Options{Stdout: os.Stdout, Stderr: os.Stderr, Version: version})
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "mew: %v\n", err)
		return 1
	}
	return 0
}
