// Package layers holds no code: its test checks that mew's packages import
// only packages of lower layers, so that the foundation (protocol,
// capability and the ground parts under internal/) never depends on what is
// built on it. docs/architecture.md shows the same table.
package layers
