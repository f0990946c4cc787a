package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/console/studio"
)

// studioFlags are the flags of `mew agent studio`.
type studioFlags struct {
	toolsFlags
	listen    string
	noBrowser bool
}

func newAgentStudioCmd(opts Options) *cobra.Command {
	var f studioFlags
	cmd := &cobra.Command{
		Use:   "studio --config FILE [--listen 127.0.0.1:0]",
		Short: "Edit and test the tools of a tools agent in the browser",
		Long: `Serve the tools studio for one tools agent definition on 127.0.0.1: a page
that builds each tool's parameters, edits its prompt template with a live
preview, tests it with a form generated from its schema (running it as
` + "`mew agent mcp`" + ` would, every step shown) and saves it back to FILE, other keys
and comments kept, once the loader accepts the result.

The printed URL carries a secret in its fragment: the page needs it for every
call, and only this address (not another host name) is served. A browser is
opened when xdg-open is available (--no-browser to skip). See docs/studio.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgentStudio(cmd.Context(), cmd, opts, f)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.listen, "listen", "127.0.0.1:0", "loopback address to serve on (port 0: any free port)")
	cmd.Flags().BoolVar(&f.noBrowser, "no-browser", false, "do not try to open a browser")
	return cmd
}

// loopbackListen listens on addr, which must be a loopback IP address.
func loopbackListen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("--listen %q: the studio writes files, so it serves on a loopback IP address only (such as 127.0.0.1:0)", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("agent studio: %w", err)
	}
	return l, nil
}

func runAgentStudio(ctx context.Context, cmd *cobra.Command, opts Options, f studioFlags) error {
	l, err := loopbackListen(f.listen)
	if err != nil {
		return err
	}
	// The same reading as `mew agent mcp`: the definition must load, its
	// warnings are logged, the flags choose the model.
	_, logger, provider, err := f.load(cmd, opts, false)
	if err != nil {
		_ = l.Close()
		return err
	}
	s, err := studio.New(studio.Options{Config: f.config, Provider: provider, Getenv: opts.getenv(), Environ: opts.Environ, Logger: logger})
	if err != nil {
		_ = l.Close()
		return err
	}
	url := s.URL(l.Addr())
	fmt.Fprintf(cmd.OutOrStdout(), "Tools studio for %s:\n  %s\n(Ctrl-C to stop)\n", f.config, url)
	if !f.noBrowser {
		openBrowser(ctx, logger, url)
	}
	return s.Serve(ctx, l)
}

// openBrowser asks xdg-open to show url, when there is one; the studio
// works without. xdg-open is waited for on a goroutine of its own, which
// ends when it exits or ctx ends.
func openBrowser(ctx context.Context, logger *slog.Logger, url string) {
	path, err := exec.LookPath("xdg-open")
	if err != nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	c := exec.CommandContext(cctx, path, url)
	if err := c.Start(); err != nil {
		cancel()
		logger.Debug("studio: xdg-open failed", "err", err)
		return
	}
	go func() {
		defer cancel()
		_ = c.Wait()
	}()
}
