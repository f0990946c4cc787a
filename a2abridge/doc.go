// Package a2abridge joins a remote A2A agent to a MEW space as a
// participant: the other direction of toolsagent's A2A server.
//
// A Bridge reads the agent's card (a2a.FetchCard), calls it through
// a2a.Client over the card's JSON-RPC 1.0 interface, and holds a
// *participant.Participant whose participant/status carries the card
// (member StatusField: the URL called and the card, or a summary of a
// card larger than 32 KiB).
//
// # Skills are tools
//
// Each skill of the card is a tool of the participant (ToolName: the
// skill's id, made safe), with SkillSchema as its input: a message, an
// optional data object and, to continue a task that asked for input, its
// task_id. A tools/call sends the agent a message naming the skill
// (metadata skillId) and answers with the task's artifacts as content
// (images as images, the rest as text) and {"task_id","state"} as
// structured content; a task that asks for input answers with the
// question and how to continue it (only the participant whose call it was
// may); a task that fails, is rejected or canceled is an error result.
// So a MEW agent delegates to the agent by calling the tool, and a
// participant that may only propose the call needs its approval first,
// as for any tool. A call cancelled in the space (notifications/cancelled,
// a withdrawn proposal) cancels the task at the agent.
//
// # Chats
//
// A chat addressed to the bridge (its id in to, or a broadcast that
// @mentions it) becomes a message to the agent, without a skill: the
// agent picks. The chat is acknowledged ("processing"); a reasoning/start
// correlated to it opens the task's reasoning, each status message of the
// task and each artifact as it begins is a reasoning/thought (at most
// Options.MaxThoughts), and the answer — the artifacts' text, else the
// agent's message — is a chat to the asker correlated to its chat, after
// a reasoning/conclusion. Agents that stream are followed over their
// stream; others are polled with GetTask.
//
// When the task needs input, the agent's question is a chat to the asker
// correlated to its chat. The answer is the asker's next chat to the
// bridge (or any chat to it correlated to the question); it continues the
// task. Besides the asker, only the participants in Options.Answerers may
// answer; anyone else is told so. A question unanswered for
// Options.QuestionTimeout cancels the task.
//
// # Cancellation
//
// A chat/cancel of the chat (or of the question), or a reasoning/cancel
// of the task's reasoning, from the asker or an answerer, cancels the
// task at the agent (CancelTask) and concludes the reasoning with
// cancelled: true, without an answer, as an agent does. A task the agent
// cancels itself is told in the space. Stopping the bridge cancels the
// tasks under way at the agent.
//
// # Bounds
//
// At most Options.MaxTasks tasks run at once. One exchange lasts at most
// Options.TaskTimeout and Options.MaxEvents events (or polls): an agent
// that streams forever is cut there, its task canceled, the asker told.
// A stream that breaks is subscribed to once more (SubscribeToTask); a
// second break asks GetTask once, and unless the task finished, is
// reported (ErrStreamBroken). An answer's parts are kept up to
// Options.MaxAnswerBytes, the rest cut with a note; a.Client bounds each
// event (1 MiB) and response (8 MiB).
//
// # Credentials
//
// Auth holds a bearer token, an API key and OAuth 2.0 client credentials;
// the card's security requirements decide which are sent, and where (see
// Auth). They go only to the card's origin, never in the clear beyond
// loopback, and are never logged.
//
// # Concurrency
//
// Run owns every goroutine it starts: the chats' tasks and their messages
// to the space run on goroutines it waits for before it returns; tool
// calls run on the participant's, which Close waits for. Handlers on the
// client's dispatch goroutine only start work. Bridge.mu guards the
// tables of tasks and is never held while sending or calling the agent.
package a2abridge
