// Package cli holds the commands of the mew binary.
//
// NewRoot builds a fresh cobra command tree from an Options value: the writers it prints to and the
// version it reports. The package keeps no global state and registers nothing in init, so a test can
// build and run as many independent trees as it likes, capturing their output through Options.
//
// Commands are named and flagged as in the reference TypeScript CLI, so that scripts written for it
// keep working: demo, init, space (up, down, status, clean, connect) with the shorthands up and
// down, gateway start, client connect, agent (run, mcp, a2a, tool-test, studio), bridge start, mcp,
// token, log, bench and version.
// docs/cli.md describes each; a test checks that every command line the docs show parses.
package cli
