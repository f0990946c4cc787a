// Package console is the web console of a space: a page served by the
// gateway at /console/ that joins the space as one participant and shows
// it live (the stream with a renderer per kind, the approval queue, the
// grants ledger, participant controls, the correlation view and the
// participants map).
//
// The page is plain ES modules and CSS embedded in the binary (web/), with
// no build step and no external URL. Handler serves it with a strict
// Content-Security-Policy. The gateway owns joining: one-time links, their
// exchange for a session and the WebSocket's Origin check live in the
// gateway package (see docs/console.md); this package imports nothing of
// the module, so that the gateway can import it.
package console
