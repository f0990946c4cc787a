package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/internal/mcpserve"
	"github.com/mew-protocol/mew/internal/mcpserver"
)

func newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "MCP servers that ship with mew, over stdio or streamable HTTP (calculator, cat-maze, filesystem)",
		// A name that is no server is an error, not help and exit 0: a
		// bridge or an MCP host that runs `mew mcp NAME` must fail, not
		// restart a command that printed help forever.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			var known []string
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() && c.Name() != "list" {
					known = append(known, c.Name())
				}
			}
			return fmt.Errorf("mcp: no MCP server %q (the servers: %s; mew mcp list)", args[0], strings.Join(known, ", "))
		},
	}
	var httpAddr string
	calc := &cobra.Command{
		Use:   "calculator [--http ADDR]",
		Short: "A calculator MCP server: add, subtract, multiply, divide",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveMCP(cmd, mcpserver.Calculator(), httpAddr)
		},
	}
	fs := &cobra.Command{
		Use:   "filesystem DIR [--http ADDR]",
		Short: "A filesystem MCP server confined to DIR (created when missing)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, closeRoot, err := mcpserver.Filesystem(args[0])
			if err != nil {
				return err
			}
			defer closeRoot()
			return serveMCP(cmd, s, httpAddr)
		},
	}
	maze := &cobra.Command{
		Use:   "cat-maze [--http ADDR]",
		Short: "The cat-maze game: guide the cat through ten mazes with view, up, down, left, right, restart",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveMCP(cmd, mcpserver.CatMaze(), httpAddr)
		},
	}
	for _, c := range []*cobra.Command{calc, fs, maze} {
		c.Flags().StringVar(&httpAddr, "http", "", "serve streamable HTTP at http://ADDR/mcp (such as 127.0.0.1:8931) instead of stdio")
	}
	cmd.AddCommand(calc, fs, maze, &cobra.Command{
		Use:   "list",
		Short: "List the servers",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "calculator  add, subtract, multiply, divide")
			fmt.Fprintln(cmd.OutOrStdout(), "cat-maze    a maze game: view, up, down, left, right, restart")
			fmt.Fprintln(cmd.OutOrStdout(), "filesystem  files in one directory: read, write, list, search, move")
		},
	})
	return cmd
}

// serveMCP serves s over streamable HTTP on httpAddr (the tools agent's
// serving, package mcpserve) when it is set, else over stdio.
func serveMCP(cmd *cobra.Command, s *mcp.Server, httpAddr string) error {
	if httpAddr == "" {
		return serveStdio(cmd, s)
	}
	l, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	logger.Info("serving MCP over streamable HTTP", "server", cmd.Name(), "url", "http://"+l.Addr().String()+mcpserve.Path)
	if err := mcpserve.ServeHTTP(cmd.Context(), l, s, logger); err != nil {
		return fmt.Errorf("mcp %s: %w", cmd.Name(), err)
	}
	return nil
}

// stdinGrace is how long a server whose standard input has closed may take
// to finish before the command returns anyway.
const stdinGrace = 2 * time.Second

// serveStdio serves s on the command's standard input and output until the
// input ends or the command is cancelled. When the input ends the host is
// gone: the command returns within stdinGrace even if a tool is still busy,
// since a server left running without a host is a leak.
func serveStdio(cmd *cobra.Command, s *mcp.Server) error {
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	in := &eofReader{r: cmd.InOrStdin(), eof: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopCloser{cmd.OutOrStdout()}})
	}()
	var err error
	select {
	case err = <-done:
	case <-in.eof:
		cancel()
		t := time.NewTimer(stdinGrace)
		defer t.Stop()
		select {
		case err = <-done:
		case <-t.C:
			return nil
		}
	}
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("mcp server: %w", err)
}

// eofReader is a reader that closes eof once its reader has failed or
// ended.
type eofReader struct {
	r    io.Reader
	eof  chan struct{}
	once sync.Once
}

func (e *eofReader) Read(b []byte) (int, error) {
	n, err := e.r.Read(b)
	if err != nil {
		e.once.Do(func() { close(e.eof) })
	}
	return n, err
}

// nopCloser is a writer with a Close that does nothing.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
