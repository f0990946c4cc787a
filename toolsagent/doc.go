// Package toolsagent is the tools mode of a mew agent: an agent that any
// MCP host (Claude Desktop, an IDE, another agent) calls as an ordinary
// MCP server, whose tools are prompt templates that a language model
// carries out with tools of its own.
//
// # Definitions
//
// A definition (Load, Parse) is a YAML or JSON file: name, version and
// description (the MCP serverInfo and instructions), mode: tools, model
// settings with the agent package's keys (model, systemPrompt,
// maxIterations, mockLLM, apiKey, baseURL, ...), the MCP servers and
// space participants the agent may use, each with a permission flag, and
// the tools, each {name, description, parameters, prompt} (and, for A2A
// skills, tags, examples, inputModes and outputModes). Parameters are
// the spec's JSON Schema subset as Go types: Schema is a union
// discriminated by type (*StringSchema, *NumberSchema, *BooleanSchema,
// *ArraySchema, *ObjectSchema), and the root is an object. Loading checks
// all of it and reports every problem with its path and line in a
// *LoadError; warnings (a required parameter the prompt never uses, a
// server that needs approval, ...) are in Definition.Warnings. Keys that
// start with "x-" are ignored, a place for YAML anchors.
//
// # Templates
//
// A prompt names the tool's own properties ({name}, {description}) and the
// call's arguments ({destination}); "{{" and "}}" are literal braces. A
// string argument is inserted as its text, any other value as compact
// JSON. A parameter the call leaves out takes its default; without one it
// is empty when the call runs (Tool.Fill) and shows as {param} in a
// preview (Tool.Preview). Filling is one pass over the template: values
// are data, inserted as they are and never scanned again, so an argument
// containing "{name}" or "{{" reaches the model exactly as the caller
// wrote it. The filled prompt is bounded by MaxPromptBytes and the
// arguments by MaxArgumentBytes.
//
// # Calls
//
// Agent.Call checks the arguments against the schema (an *ArgumentError
// lists every violation), fills the template and runs a fresh headless
// ReAct session (agent.Run) with its own context id and no history
// (unless Definition.SharedHistory), bounded by the model settings'
// maxIterations and by Definition.Timeout. The model may call only the
// tools the agent may use without approval: those of the MCP servers
// flagged permission: never (servers flagged always are never started),
// and in a space those of the participants the definition allows that the
// agent's capabilities let it call with a direct mcp/request; it never
// proposes. The result is the model's final text.
//
// # Serving
//
// NewMCPServer builds the MCP server (the official go-sdk): initialize
// answers serverInfo and instructions, tools/list the tools with their
// schemas, tools/call runs Call, with progress notifications while it
// runs and notifications/cancelled to stop it. ServeMCP runs it on a
// transport such as stdio, ServeStreamableHTTP over streamable HTTP, and
// ServeSpace as a participant of a MEW space, whose calls show their
// steps as reasoning/* envelopes correlated to the mcp/request.
//
// # Concurrency
//
// An Agent is safe for concurrent use; at most
// Definition.MaxConcurrentCalls calls run at once, the others wait. A call
// runs on its caller's goroutine (the MCP SDK's handler goroutine, or one
// of ServeSpace's, which ServeSpace waits for before it returns); Close
// ends the calls under way and stops the MCP servers.
package toolsagent
