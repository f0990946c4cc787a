package cli

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// run builds a fresh command tree, executes it with args and returns what it wrote.
func run(t *testing.T, opts Options, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	opts.Stdout, opts.Stderr = &out, &errOut
	root := NewRoot(opts)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	stdout, stderr, err := run(t, Options{Version: "v1.2.3"}, "version")
	if err != nil {
		t.Fatalf("mew version: %v", err)
	}
	want := fmt.Sprintf("mew v1.2.3 (%s, %s/%s)\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
	if stderr != "" {
		t.Errorf("stderr = %q, want nothing", stderr)
	}
}

func TestVersionCommandRejectsArgs(t *testing.T) {
	t.Parallel()
	stdout, _, err := run(t, Options{Version: "v1.2.3"}, "version", "extra")
	if err == nil {
		t.Fatal("mew version extra: want an error, got none")
	}
	if stdout != "" {
		t.Errorf("stdout = %q, want nothing (SilenceUsage)", stdout)
	}
}

func TestVersionFlag(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--version", "-V"} {
		stdout, stderr, err := run(t, Options{Version: "v1.2.3"}, flag)
		if err != nil {
			t.Fatalf("mew %s: %v", flag, err)
		}
		if stdout != "v1.2.3\n" {
			t.Errorf("mew %s: stdout = %q, want %q", flag, stdout, "v1.2.3\n")
		}
		if stderr != "" {
			t.Errorf("mew %s: stderr = %q, want nothing", flag, stderr)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	t.Parallel()
	stdout, stderr, err := run(t, Options{Version: "v1.2.3"}, "frobnicate")
	if err == nil {
		t.Fatal("mew frobnicate: want an error, got none")
	}
	if !strings.Contains(err.Error(), `unknown command "frobnicate"`) {
		t.Errorf("error = %q, want it to name the unknown command", err)
	}
	// The caller prints the error once; cobra must print neither it nor the usage.
	if stdout != "" || stderr != "" {
		t.Errorf("output = %q / %q, want nothing", stdout, stderr)
	}
}

func TestNoArgsPrintsHelp(t *testing.T) {
	t.Parallel()
	stdout, _, err := run(t, Options{Version: "v1.2.3"})
	if err != nil {
		t.Fatalf("mew: %v", err)
	}
	for _, want := range []string{"Usage:", "mew [command]", "version"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help output lacks %q:\n%s", want, stdout)
		}
	}
}

// Two trees built with different options must not see each other's settings.
func TestTreesAreIndependent(t *testing.T) {
	t.Parallel()
	a, _, errA := run(t, Options{Version: "v1.0.0"}, "--version")
	b, _, errB := run(t, Options{Version: "v2.0.0"}, "--version")
	if errA != nil || errB != nil {
		t.Fatalf("errors: %v, %v", errA, errB)
	}
	if a != "v1.0.0\n" || b != "v2.0.0\n" {
		t.Errorf("got %q and %q, want v1.0.0 and v2.0.0", a, b)
	}
}

func TestResolveVersion(t *testing.T) {
	t.Parallel()
	info := func(v string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Path: "github.com/mew-protocol/mew", Version: v}}, true
		}
	}
	noInfo := func() (*debug.BuildInfo, bool) { return nil, false }

	tests := []struct {
		name, explicit string
		buildInfo      func() (*debug.BuildInfo, bool)
		want           string
	}{
		{"ldflags wins", "v9.9.9", info("v0.1.0"), "v9.9.9"},
		{"module version", "", info("v0.1.0"), "v0.1.0"},
		{"devel build", "", info("(devel)"), "devel"},
		{"empty module version", "", info(""), "devel"},
		{"no build info", "", noInfo, "devel"},
	}
	for _, tt := range tests {
		if got := resolveVersion(tt.explicit, tt.buildInfo); got != tt.want {
			t.Errorf("%s: resolveVersion = %q, want %q", tt.name, got, tt.want)
		}
	}
}
