package bridge_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/bridge"
)

// TestBridgeMissingCwd: a server whose working directory is missing fails
// to start with an error naming the directory, not the exec error that
// blames the command.
func TestBridgeMissingCwd(t *testing.T) {
	g := startSpace(t, "")
	server := goServer(t, "normal")
	server.Dir = filepath.Join(t.TempDir(), "files")
	_, err := tryStartBridge(t, g, bridge.Options{Server: server, NoRestart: true})
	if err == nil || !strings.Contains(err.Error(), "working directory") || !strings.Contains(err.Error(), server.Dir) {
		t.Fatalf("start: %v", err)
	}
}
