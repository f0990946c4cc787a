//go:build !unix

package gateway

// defaultMaxConnections is a fixed cap where the descriptor limit cannot be
// read.
func defaultMaxConnections() int { return 8192 }
