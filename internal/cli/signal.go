package cli

import (
	"context"
	"os/signal"
	"syscall"
)

// withHangup returns ctx that also ends when the terminal hangs up
// (SIGHUP). Without it, closing the terminal of a foreground space would
// kill mew at once and leave the gateway, bridges and MCP servers running
// (each in its own process group, so the hang-up does not reach them) and
// the demo's temporary folder behind; with it, a hang-up stops everything
// as Ctrl-C does. (On Windows, where there is no SIGHUP, it never fires.)
func withHangup(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, syscall.SIGHUP)
}
