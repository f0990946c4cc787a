package oauthclient

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"
)

// OpenerEnv names the environment variable holding the command that is
// given the authorisation URL as its last argument.
const OpenerEnv = "MEW_OAUTH_OPENER"

// An Opener brings a person (or a script) to the authorisation URL. It
// may return at once (a browser was asked to open it) or once it has
// followed the redirect; either way the flow waits for the redirect to
// reach the loopback listener. An error ends the flow only when the
// redirect has not come.
type Opener func(ctx context.Context, authURL string) error

// EnvOpener returns the opener that MEW_OAUTH_OPENER names, as getenv
// sees it: the command, split on spaces, run with the URL as its last
// argument and its output sent to stderr. Unset, it prints the URL to
// stderr and tries the desktop's opener (xdg-open, or open on macOS)
// quietly.
func EnvOpener(getenv func(string) string, stderr io.Writer) Opener {
	if stderr == nil {
		stderr = io.Discard
	}
	if open := CommandOpener(getenv(OpenerEnv), stderr); open != nil {
		return open
	}
	return func(ctx context.Context, authURL string) error {
		fmt.Fprintf(stderr, "To authorise the bridge, open this URL in a browser:\n\n  %s\n\n", authURL)
		name := "xdg-open"
		if runtime.GOOS == "darwin" {
			name = "open"
		}
		if path, err := exec.LookPath(name); err == nil {
			// Quietly: without a desktop it fails, and the printed URL stays.
			_ = exec.CommandContext(ctx, path, authURL).Run()
		}
		return nil
	}
}

// CommandOpener returns an opener that runs cmdline (split on spaces) with
// the URL as its last argument, its output sent to stderr (nil: dropped),
// or nil when cmdline is empty. The terminal UI opens the links of
// URL-mode elicitations with it too.
func CommandOpener(cmdline string, stderr io.Writer) Opener {
	fields := strings.Fields(cmdline)
	if len(fields) == 0 {
		return nil
	}
	if stderr == nil {
		stderr = io.Discard
	}
	return func(ctx context.Context, authURL string) error {
		cmd := exec.CommandContext(ctx, fields[0], append(fields[1:], authURL)...)
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %w", OpenerEnv, fields[0], err)
		}
		return nil
	}
}
