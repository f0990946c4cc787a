// Package feedtest reads the shared envelope-to-event vectors
// (internal/feed/testdata/vectors.json) for the tests of the readers and
// clients held to them: internal/feed, the terminal UI, the line client
// and the console. It is for tests only.
package feedtest
