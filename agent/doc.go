// Package agent is layer 3 of the MEW Protocol SDK: an autonomous participant
// that answers chats with a language model, calling the tools of the other
// participants as it goes (the ReAct pattern: reason, act, observe, repeat).
//
// An Agent holds a *participant.Participant (layer 2) and an llm.Provider.
// New configures it, Connect joins the space, Close stops its work and leaves.
//
// # Which chats it answers
//
// The agent ignores its own envelopes and the gateway's. It answers a chat
// addressed to it (its id in to) and a broadcast chat that mentions it
// ("@<id>", or "@<Config.Name>"); any other broadcast chat only when
// Config.AutoRespond is set. A chat addressed to others only is not for it,
// and neither is a chat correlated to one of its own latest answers (another
// agent's answer to it: answering that would start an endless exchange
// between two agents). It acknowledges each chat it will answer at once
// with chat/acknowledge (status "processing"), then answers the chats one at a
// time, in order of arrival, from a queue of at most Config.QueueSize chats:
// beyond that the oldest waiting chat is dropped, with a log line. While the
// participant is paused (participant/pause) the agent starts no new work:
// the queue waits, and a chat being answered stops before its next model
// call, or before its answer, until the pause ends.
//
// # The ReAct loop
//
// For each chat the agent waits (at most Config.DiscoveryWait) for the tool
// discoveries under way, then asks the model with the system prompt, the
// recent conversation (Config.HistoryLength messages) and the chat's text,
// offering the other participants' discovered tools. Each tool is named for
// the model "<participant>/<tool>" (see ToolName; the llm package rewrites
// names the model API refuses and maps them back). Participant ids that
// contain "/" would make the name ambiguous: their tools are not offered.
//
// When the model calls tools the agent runs each with participant.Request
// as an MCP tools/call to its participant, which is a direct mcp/request when
// the agent's capabilities allow it and an mcp/proposal otherwise, and gives
// the results back to the model (an error as text, so the model can react to
// it). It asks again, up to Config.MaxIterations times. The model's final text
// is sent as a chat to the asker, correlated to the question. When the model
// fails, or the loop runs out of iterations, the answer is a chat saying what
// went wrong.
//
// # Reasoning transparency
//
// With Config.ReasoningEnabled the agent sends reasoning/start (correlated to
// the question) before the loop, a reasoning/thought for each answer of the
// model (context: the start's id; payload: message, reasoning, action
// "tool_call" or "respond", actionInput), and reasoning/conclusion (same
// context) before the final chat.
//
// # Cancellation
//
// A reasoning/cancel whose context is the reasoning in progress, or a
// chat/cancel correlated to the question being answered, stops the loop: the
// model call or tool call under way is abandoned (a proposal is withdrawn)
// and no answer is sent. The reasoning is ended with a reasoning/conclusion
// whose payload says cancelled: true and the reason. A chat/cancel of a chat
// still waiting in the queue removes it.
//
// # Participant controls
//
// participant/forget drops conversation history (the oldest or newest
// entries, all when the control names no number), participant/clear drops all
// of it; a paused agent starts no new work.
package agent
