// Package agent is layer 3 of the MEW Protocol SDK: an autonomous participant
// that answers chats with a language model, calling the tools of the other
// participants as it goes (the ReAct pattern: reason, act, observe, repeat).
//
// An Agent holds a *participant.Participant (layer 2) and an llm.Provider.
// New configures it, Connect joins the space, Close stops its work and leaves.
//
// # Which chats it answers
//
// The agent ignores its own envelopes and the gateway's, and chats
// correlated to one of its own latest answers (another agent's answer to it:
// answering that would start an endless exchange between two agents). It
// answers a chat addressed to it (its id in to) and a broadcast chat that
// mentions it ("@<id>", or "@<Config.Name>"), unless ChatResponse turns
// these off. A chat addressed to others only is not for it. Any other
// broadcast chat is considered only with Config.AutoRespond, at most
// ChatResponse.AnswersPerMinute of them a minute: a classifier call asks
// the model, with the latest ChatResponse.ContextWindow chats of the space
// and the tools it has, whether the agent should answer, and it answers when
// the model says yes with at least ChatResponse.ConfidenceThreshold
// confidence. When the classifier fails or does not answer with the JSON
// asked for, the agent answers questions (a text with "?") only; the offline
// model answers questions and the requests one of the tools fits.
//
// It acknowledges each chat it will answer with chat/acknowledge (status
// "processing": at once for a chat addressed to it or mentioning it, after
// the classifier for others), then answers the chats one at a time, in
// order of arrival, from a queue of at most Config.QueueSize chats: beyond
// that the oldest waiting chat is dropped, with a log line. While the
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
// # Floor control
//
// Before answering a broadcast chat that neither addresses nor mentions it
// (and does not come from one of Config.FloorControl.Operators), the agent
// waits a random delay (2 to 8 s by default, counted from the chat's
// arrival), skips the chat if another participant's floor/responding-to
// for it has been seen, and otherwise claims it with floor/responding-to
// (started_at: the time just before the first model call). A floor/yield
// from the gateway for that chat, or another claim that beats the agent's
// (earlier started_at, or the same and a smaller id), stops the answer: the
// model call is cancelled, nothing is sent, and an open reasoning ends with
// reasoning/cancel. participant/status carries the counters floor_yields
// and answers_suppressed. A broadcast chat that mentions another
// participant is left to them.
//
// # Prompts
//
// Config.Prompts shapes what the model is asked (see Prompts for the
// placeholders of each phase): the system prompt, the question (reason),
// a message after each round of tool results (act), a last call without
// tools that writes the answer from the results (respond), and the
// classifier's question. Config.ReasoningFormat "scratchpad" gives the model
// the steps so far as one text instead of tool messages.
//
// # Reasoning transparency
//
// With Config.ReasoningEnabled the agent sends reasoning/start (correlated to
// the question) before the loop, a reasoning/thought for each answer of the
// model (context: the start's id; payload: message, reasoning, action
// "tool_call" or "respond", actionInput), and reasoning/conclusion (same
// context) before the final chat. The tool calls and proposals it makes
// meanwhile carry the same context, so that readers (the audit log's
// lineage, the console) tie them to the reasoning without guessing. When it
// may send stream/request it also
// opens an upload stream for the reasoning (its metadata names the
// reasoning/start id) and writes into it, as JSON frames, each thought
// ({"type":"thought"}), each tool result ({"type":"observation"}) and the
// model's output as it is generated ({"type":"content"} and
// {"type":"reasoning"}, in pieces of up to 256 bytes or 100 ms); the model is
// then called in streaming mode. The stream is closed with the conclusion
// ("complete", or "cancelled").
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
// # Conversation history and compaction
//
// The agent remembers its exchanges (question and answer, the latest
// Config.HistoryLength messages) and gives them to the model. Before each
// answer it keeps 30% of Config.ContextTokenLimit free: when the system
// prompt, the history and the question would take more, the oldest history
// is dropped and participant/status reports "compacted:dropped N messages".
// Tokens are estimated at one per four bytes of text.
//
// # Participant controls
//
// participant/forget drops conversation history (the oldest or newest
// entries, all when the control names no number), participant/clear drops all
// of it, participant/compact drops its older half (the participant answers
// with participant/compact-done); a paused agent starts no new work.
package agent
