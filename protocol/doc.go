// Package protocol holds the wire format of MEW Protocol v0.4: the envelope,
// the kinds, typed payloads, validation, envelope ids and stream data frames.
// It does no I/O; the gateway and every SDK layer build on it.
//
// # Envelope
//
// An [Envelope] is one JSON object with the members protocol, id, ts, from,
// to, kind, correlation_id, context and payload (spec §3). The payload stays
// raw JSON ([encoding/json.RawMessage]): the gateway matches capabilities
// against it and relays it without decoding and re-encoding, so a participant
// receives the bytes the sender wrote, and unknown payload members survive.
// Members the envelope does not define are kept in [Envelope.Extra], in order.
// [Envelope.DecodePayload] turns the payload into one of the typed payload
// structs ([Chat], [Welcome], [MCPMessage], ...; [PayloadFor] picks one by
// kind) when a program needs it.
//
// # Decoding: strict about types, tolerant of unknown members
//
// [Decode], [Decoder.Decode] and [Envelope.UnmarshalJSON] parse with
// internal/jsontape, which refuses invalid JSON, invalid UTF-8, duplicate
// keys (a recipient would read the last, a matcher the first) and deep
// nesting. Then the envelope must be an object; protocol, id, ts, from, kind
// and context non-empty strings; to and correlation_id arrays of strings (a
// lone string is an error, not wrapped into an array); payload an object or
// null (= absent). Unknown members are accepted. A [Decoder] reuses its
// buffers, and a decoded envelope never aliases the input, which the caller
// may reuse at once.
//
// # Encoding
//
// [Envelope.AppendJSON] writes compact JSON with the members in the reference
// implementation's order and escapes strings as JavaScript's JSON.stringify
// does (not <, > and &, unlike encoding/json), because tests and scripts grep
// the gateway's logs for exact bytes such as "to":["bob"]. Decoding and then
// encoding an envelope the reference sent gives back its bytes.
//
// # Validation
//
// [Envelope.Validate] checks what a participant may send,
// [Envelope.ValidateComplete] what a gateway relays (protocol, id, ts and from
// present too). Errors are [*FieldError] values naming the member, wrapping
// sentinels such as [ErrTooLong] for errors.Is. Limits, in bytes or entries:
// kind 1..[MaxKindLen] (128) of [A-Za-z0-9/._:-]; id, from and each to and
// correlation_id entry up to [MaxIDLen] (256); context up to [MaxContextLen]
// (1024); to up to [MaxTo] (1024) entries; correlation_id up to
// [MaxCorrelationIDs] (256); stream ids up to [MaxStreamIDLen] (256).
//
// Payload rules per kind. "payload" says whether a payload is required;
// members marked * are required; "corr" and "ctx" mean correlation_id or
// context is required, because the spec says the envelope MUST reference
// another. A member that is present must have the type shown, string where
// none is; null counts as absent. Members not listed are not checked (payloads
// may carry more). A kind not listed needs nothing; its payload, if any, must
// be an object.
//
//	kind                                payload  members                                        envelope
//	chat                                yes      text* (non-empty string), format               -
//	chat/acknowledge                    no       status                                         corr
//	chat/cancel                         no       reason                                         corr
//	mcp/request, mcp/proposal           yes      method* (non-empty), jsonrpc, params           -
//	                                             (object|array)
//	mcp/response                        yes      jsonrpc, error (object)                        corr
//	mcp/withdraw, mcp/reject            no       reason                                         corr
//	reasoning/start|thought|conclusion  no       message                                        -
//	reasoning/cancel                    no       reason                                         ctx
//	capability/grant                    yes      recipient*, capabilities* (objects), reason    -
//	capability/revoke                   yes      recipient*, grant_id* or capabilities*         -
//	                                             (objects), reason
//	capability/grant-ack                no       status                                         -
//	space/invite                        yes      participant_id*, email, initial_capabilities   -
//	                                             (objects), reason
//	space/kick                          yes      participant_id*, reason                        -
//	space/invite-ack                    yes      status*, participant_id, token,                -
//	                                             connection_url, error
//	participant/pause                   no       reason, timeout_seconds (number)               -
//	participant/resume|clear|shutdown   no       reason                                         -
//	participant/restart                 no       reason, mode                                   -
//	participant/request-status          no       fields (strings)                               -
//	participant/status                  yes      tokens, max_tokens, messages_in_context,       -
//	                                             latency_ms (numbers), status
//	participant/forget                  yes      direction* (oldest|newest), entries (number)   -
//	participant/compact                 no       reason, target_tokens (number)                 -
//	participant/compact-done            no       freed_tokens, freed_messages (numbers),        -
//	                                             skipped (bool), status, reason
//	stream/request                      yes      direction* (upload|download),                  -
//	                                             expected_size_bytes (number), metadata
//	                                             (object), target (strings), description,
//	                                             content_type, format
//	stream/open                         yes      stream_id*, encoding, owner,                   -
//	                                             authorized_writers, target (strings)
//	stream/close                        no       stream_id, reason                              -
//	stream/grant-write|revoke-write     yes      stream_id*, participant_id*, reason            -
//	stream/transfer-ownership           yes      stream_id*, new_owner*, reason                 -
//	stream/write-granted|write-revoked  yes      stream_id*, participant_id*,                   -
//	                                             authorized_writers (strings), reason
//	stream/ownership-transferred        yes      stream_id*, new_owner*, previous_owner,        -
//	                                             authorized_writers (strings), reason
//	floor/responding-to                 yes      started_at* (number)                           corr
//	floor/yield                         yes      winner*, winner_started_at* (number)           corr
//	system/welcome                      yes      you* (object), participants* (objects),        -
//	                                             active_streams (objects)
//	system/presence                     yes      event*, participant* (object)                  -
//	system/error                        yes      error* (non-empty), message                    -
//
// Deliberate leniencies: participant/status does not require
// messages_in_context although the spec says it MUST be included, and
// mcp/response does not require result or error, because reference
// participants send such payloads and refusing telemetry or an answer helps
// nobody. reasoning/* accept the reference agent's input and reasoning members
// in place of message. Validate does not decide who may send a kind: that
// system/* and floor/yield are gateway-only ([IsGatewayOnly]) and capability
// checks are the gateway's.
//
// # Ids and frames
//
// [NewID] makes time-ordered UUIDv7 ids. Stream data travels outside
// envelopes as "#<stream_id>#<data>" messages (spec §3.10.3): [AppendFrame],
// [ParseFrame] (no allocation) and [IsFrame].
package protocol
