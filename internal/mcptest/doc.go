// Package mcptest is an MCP server written with the official go-sdk,
// for the tests of the bridge and of `mew bridge start`: a test binary runs
// it as a stdio server in a child process of its own (see Main), or serves
// it over HTTP in process (see New and ServeHTTP).
//
// It has tools that succeed, fail, fail with a JSON-RPC error of their own,
// take their time, crash the process, add a tool (so that the tool list
// changes), write to standard error and to standard output behind the
// SDK's back; a resource, a resource template and a prompt. It lists two
// items per page, so that listings have several pages.
package mcptest
