// Package studio is the tools studio: a local web page for writing and
// testing the tools of one tools-agent definition (toolsagent), served by
// `mew agent studio --config FILE`.
//
// # The page
//
// The page (embedded, plain ES modules, CSP default-src 'self') lists the
// definition's tools; for each it edits the name and description, builds
// the parameters (the JSON Schema subset the loader accepts), edits the
// prompt template with its {placeholders} highlighted, unknown ones and
// unused parameters flagged as one types, and previews the prompt with
// sample values. Its Test form is generated from the schema and checked as
// one types; Run carries the tool out headless through toolsagent.Agent.Call,
// the code path of `mew agent mcp`, and streams each step.
//
// # The API
//
// Every request must name the loopback address the server listens on in
// its Host header (a page of another site reaching it by DNS rebinding
// names its own host). Every /api/ call must carry the run's secret in the
// X-Studio-Secret header; the secret is in the fragment of the URL the
// command prints, which the browser never sends. Writes must come from
// the studio's own origin, with a JSON body no larger than MaxBodyBytes.
//
//   - GET /api/definition: the file's tools as written, its servers and
//     the loader's problems.
//   - POST /api/check: the loader's verdict on the page's tools, and the
//     file as Save would write it.
//   - POST /api/preview: one tool's prompt filled from sample arguments
//     (Tool.Preview), with what is wrong with them.
//   - POST /api/run: one call, streamed as JSON lines (start, model, tool,
//     result or error).
//   - POST /api/save: writes the page's tools into the file, other keys and
//     comments kept, after the loader accepted the result; the file is
//     replaced by renaming a temporary file, keeping its mode.
package studio
