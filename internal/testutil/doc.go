// Package testutil holds helpers shared by mew's tests: a real gateway on
// 127.0.0.1:0 built from a space.yaml written to a temporary directory
// (StartGateway, and Serve for Examples; SpaceYAML and Member write the
// space), several gateway nodes of a cluster on an embedded NATS server
// (StartCluster), a small WebSocket peer that speaks the wire protocol
// directly (Join, JoinAll), a TCP proxy that cuts a connection as a network partition does
// (Proxy), LLMServer, a scripted OpenAI-compatible HTTP server that stands
// in for the model and nothing else, participants and agents joined for a
// test (JoinParticipant, ArithTool, StartAgent, WaitTools), a run for a
// test (Background, StartRun, StartBridge, StartBooking, CallBooking),
// HTTPDo, Executable, CheckToolsServer and WriteDefinition, and the waits
// every suite needs (WaitFor, Context, Receive and ReceiveWhere for a
// channel's values, and Inbox: the envelopes a client received, to find or
// wait for).
package testutil
