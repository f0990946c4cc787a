package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/internal/mcpserver"
)

func newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "MCP servers that ship with mew, over stdio (calculator, filesystem)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "calculator",
		Short: "A calculator MCP server: add, subtract, multiply, divide",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveStdio(cmd, mcpserver.Calculator())
		},
	}, &cobra.Command{
		Use:   "filesystem DIR",
		Short: "A filesystem MCP server confined to DIR (created when missing)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, closeRoot, err := mcpserver.Filesystem(args[0])
			if err != nil {
				return err
			}
			defer closeRoot()
			return serveStdio(cmd, s)
		},
	}, &cobra.Command{
		Use:   "list",
		Short: "List the servers",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "calculator  add, subtract, multiply, divide")
			fmt.Fprintln(cmd.OutOrStdout(), "filesystem  files in one directory: read, write, list, search, move")
		},
	})
	return cmd
}

// serveStdio serves s on the command's standard input and output until the
// input ends or the command is cancelled.
func serveStdio(cmd *cobra.Command, s *mcp.Server) error {
	err := s.Run(cmd.Context(), &mcp.IOTransport{Reader: io.NopCloser(cmd.InOrStdin()), Writer: nopCloser{cmd.OutOrStdout()}})
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("mcp server: %w", err)
}

// nopCloser is a writer with a Close that does nothing.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
