// Package hostile holds mew's hostile-peer suite (issue 31, "Hostile
// peers"), and only tests: each test plays a peer that means harm — an MCP
// server behind the bridge (stdio, built from this test binary, and HTTP,
// served in the test), a participant, or a model endpoint (an
// OpenAI-compatible httptest server that the real llm and agent code call)
// — against a real gateway on 127.0.0.1 with real SDK clients. Each test
// asserts three things: the memory of the process under attack stays
// bounded (read from /proc/PID/status for a child process, from
// runtime/metrics after a collection for what runs in the test's own
// process), whoever asked gets a clear error at once instead of silence or
// a timeout, and a bystander's chat round trip through the same gateway
// stays fast while the attack goes on.
//
// The test binary is also the mew command (TestMain runs internal/cli's
// root command when envRole is "mew") and the hostile stdio MCP server
// (envRole "mcp"), so that the bridge and the agent under attack are
// processes of their own, with the real command-line code, whose resident
// memory can be read.
//
// docs/security.md, "Hostile peers", lists the classes, what mew does and
// the numbers these tests measured.
package hostile
