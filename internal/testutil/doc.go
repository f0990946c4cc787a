// Package testutil holds helpers shared by mew's tests: a real gateway on
// 127.0.0.1:0 built from a space.yaml written to a temporary directory, and
// a small WebSocket peer that speaks the wire protocol directly.
package testutil
