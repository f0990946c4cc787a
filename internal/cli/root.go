package cli

import (
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Options configures a command tree built by NewRoot.
type Options struct {
	// Stdout receives the commands' normal output; nil means os.Stdout.
	Stdout io.Writer
	// Stderr receives diagnostics; nil means os.Stderr.
	Stderr io.Writer
	// Version is the version the binary reports, usually set at link time in package main.
	// Empty means: the main module's version from the build info, else "devel".
	Version string
	// Getenv reads the environment; nil means os.Getenv. Tests set it.
	Getenv func(string) string
	// Environ is the environment given to the processes a space starts;
	// nil means os.Environ(). Tests set it.
	Environ []string
}

// getenv returns Options.Getenv or os.Getenv.
func (o Options) getenv() func(string) string {
	if o.Getenv != nil {
		return o.Getenv
	}
	return os.Getenv
}

// NewRoot returns the root `mew` command with all its subcommands. Errors are returned from
// Execute, never printed by cobra: the caller prints them once.
func NewRoot(opts Options) *cobra.Command {
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	ver := resolveVersion(opts.Version, readBuildInfo)

	root := &cobra.Command{
		Use:   "mew",
		Short: "MEW Protocol gateway, agents and tools in one space",
		Long: `mew implements MEW Protocol v0.4 (Multi-Entity Workspace Protocol).

Humans, AI agents and MCP tools share a space: one visible stream of JSON
envelopes that passes through a gateway, which enforces each participant's
capabilities. Untrusted agents propose operations; trusted participants approve
and execute them. Agents think out loud in reasoning messages everyone can see,
and take the floor in turn instead of all answering at once.`,
		Version:       ver,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(opts.Stdout)
	root.SetErr(opts.Stderr)

	// The reference CLI (Commander) answers -V/--version with the bare version.
	root.Flags().BoolP("version", "V", false, "print the version number and exit")
	root.SetVersionTemplate("{{.Version}}\n")

	root.AddCommand(newVersionCmd(ver))
	root.AddCommand(newBenchCmd(opts, gatewayBenchTarget))
	root.AddCommand(newGatewayCmd())
	root.AddCommand(newTokenCmd())
	root.AddCommand(newBridgeCmd(opts))
	root.AddCommand(newAgentCmd(opts))
	root.AddCommand(newSpaceCmd(opts), newSpaceUpCmd(opts, "up"), newSpaceDownCmd("down"))
	root.AddCommand(newClientCmd(opts))
	root.AddCommand(newInitCmd(opts))
	root.AddCommand(newMCPCmd())
	root.AddCommand(newDemoCmd(opts))
	root.AddCommand(newLogCmd())
	return root
}
