package cli

import (
	"os"
	"testing"
)

// TestMain removes the mew binary the tests built (mewBinary).
func TestMain(m *testing.M) {
	code := m.Run()
	if mewDir != "" {
		os.RemoveAll(mewDir)
	}
	os.Exit(code)
}
