package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// develVersion is reported when neither the linker nor the build info supplies a version.
const develVersion = "devel"

func newVersionCmd(ver string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of mew and the Go it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "mew %s (%s, %s/%s)\n",
				ver, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}

// readBuildInfo is debug.ReadBuildInfo; resolveVersion takes it as a parameter so tests can stand in.
func readBuildInfo() (*debug.BuildInfo, bool) { return debug.ReadBuildInfo() }

// resolveVersion picks the version to report: the explicit one (from -ldflags -X), else the main
// module's version from the build info (set by `go install module@version` or a VCS tag), else devel.
func resolveVersion(explicit string, buildInfo func() (*debug.BuildInfo, bool)) string {
	if explicit != "" {
		return explicit
	}
	if info, ok := buildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return develVersion
}
