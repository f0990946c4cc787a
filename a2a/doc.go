// Package a2a is the Agent2Agent (A2A) protocol, version 1.0, in its
// JSON-RPC binding over HTTP: the data model (Task, Message, Part,
// Artifact, AgentCard, ...), a Server that publishes an Agent Card and
// serves the JSON-RPC methods with Server-Sent Events for streaming, and a
// Client that reads a card and calls an agent.
//
// # Why our own
//
// No Go library served by the module proxy speaks A2A 1.0 (the Go SDK
// there, github.com/a2aproject/a2a-go, is at 0.3), so this package
// implements the binding from the specification's a2a.proto (package
// lf.a2a.v1) and its section 9. JSON is ProtoJSON as the specification
// requires: camelCase member names, enums as their proto names
// ("TASK_STATE_WORKING", "ROLE_USER"), Part as a oneof of text, raw, url
// and data, timestamps in RFC 3339 UTC. Methods are the 1.0 names
// (SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask,
// SubscribeToTask, ...), not 0.3's message/send; every request must carry
// the A2A-Version header (or query parameter) 1.0, as the specification
// and the official JavaScript SDK require.
//
// # Serving
//
// NewServer takes an Executor, which runs one turn of a task: it is
// called when a message creates a task and again for each message that
// continues a task waiting for input. It reports progress through its
// *Run (Working, AddArtifact) and ends the turn in a state: completed,
// failed, rejected, input-required or auth-required. CancelTask cancels
// the turn's context and the task ends canceled.
//
// Every task belongs to the caller that created it (Options.Authenticate
// names callers): another caller asking for it gets TaskNotFound, as if it
// did not exist. Bodies, messages, tasks, stored history and streams are
// bounded (Options); a stream whose reader falls behind is closed rather
// than allowed to hold up the task, and the task stays readable with
// GetTask or SubscribeToTask.
//
// # Concurrency
//
// A Server is safe for concurrent use. It owns one goroutine per running
// turn; Close cancels them and waits for them. The store's mutex guards
// every task; events are handed to subscribers under it, without
// blocking, in the order they happened.
package a2a
