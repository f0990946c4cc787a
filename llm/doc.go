// Package llm is how a mew agent talks to a language model: a small
// [Provider] interface for chat completion with tools, streaming and token
// usage, and two implementations of it.
//
//   - [OpenAI] speaks the Chat Completions API of any OpenAI-compatible
//     server (OpenAI itself, Ollama, vLLM, the llama.cpp server, OpenRouter,
//     ...) through a small client of its own (docs/agent.md says why not the
//     official SDK). It retries rate limits and server errors with backoff,
//     bounds every attempt with a timeout, and
//     turns the answers a caller must act on into errors it can test with
//     [errors.Is]: [ErrUnauthorized], [ErrNotFound], [ErrRateLimited],
//     [ErrTimeout], [ErrBadResponse], and the context's own error when the
//     caller cancels. The details are in [*APIError].
//   - [Offline] is a deterministic rule-based stand-in for a machine with no
//     model. It works out arithmetic with the usual precedence, keeps and
//     reads notes, and calls a tool that does what the request names, with
//     arguments taken from the numbers and words of the request, then says
//     what was asked and what came of it; anything else it answers by
//     saying that it is beyond it. Every answer it writes ends with
//     [OfflineLabel].
//
// [FromEnv] picks one the way the mew commands do: the OpenAI provider when
// an API key or a base URL is configured (OPENAI_API_KEY, OPENAI_BASE_URL, or
// the command's flags), the offline one otherwise; the URL of a public API
// such as OpenAI's without a key counts as no configuration ([NeedsAPIKey]).
//
// A conversation is a slice of [Message]. A model that wants a tool answers
// with [Response.ToolCalls]; the caller runs them and appends the assistant
// message (with those calls) and one [RoleTool] message per call, whose
// ToolCallID names the call, then asks again. Tool names are the caller's:
// the OpenAI provider rewrites names the API would refuse (such as
// "participant/tool") on the wire and maps the model's calls back, so a
// caller always sees the names it gave.
//
// Providers are safe for concurrent use. Streaming calls its callback on the
// calling goroutine, and no goroutine of a provider outlives the call (the
// HTTP client's idle connections are the client's).
package llm
