package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The JSON-RPC methods of A2A 1.0 (specification section 9.4).
const (
	MethodSendMessage                      = "SendMessage"
	MethodSendStreamingMessage             = "SendStreamingMessage"
	MethodGetTask                          = "GetTask"
	MethodListTasks                        = "ListTasks"
	MethodCancelTask                       = "CancelTask"
	MethodSubscribeToTask                  = "SubscribeToTask"
	MethodCreateTaskPushNotificationConfig = "CreateTaskPushNotificationConfig"
	MethodGetTaskPushNotificationConfig    = "GetTaskPushNotificationConfig"
	MethodListTaskPushNotificationConfigs  = "ListTaskPushNotificationConfigs"
	MethodDeleteTaskPushNotificationConfig = "DeleteTaskPushNotificationConfig"
	MethodGetExtendedAgentCard             = "GetExtendedAgentCard"
)

// JSON-RPC error codes: the standard ones and A2A's (specification
// sections 5.4 and 9.5).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	CodeTaskNotFound                   = -32001
	CodeTaskNotCancelable              = -32002
	CodePushNotificationNotSupported   = -32003
	CodeUnsupportedOperation           = -32004
	CodeContentTypeNotSupported        = -32005
	CodeInvalidAgentResponse           = -32006
	CodeExtendedAgentCardNotConfigured = -32007
	CodeExtensionSupportRequired       = -32008
	CodeVersionNotSupported            = -32009
	// CodeUnauthenticated is in JSON-RPC's range for server errors: A2A
	// names no code for a missing or wrong credential.
	CodeUnauthenticated = -32000
)

const (
	maxErrorMessage     = 1024
	errorDomain         = "a2a-protocol.org"
	errorInfoType       = "type.googleapis.com/google.rpc.ErrorInfo"
	jsonrpcVersion      = "2.0"
	contentTypeJSON     = "application/json"
	contentTypeSSE      = "text/event-stream"
	contentTypeA2AJSON  = "application/a2a+json"
	defaultMaxBodyBytes = 1 << 20
	maxIDBytes          = 256
)

// Error is a JSON-RPC error: an A2A error or a standard one. Compare with
// errors.Is against the sentinels (ErrTaskNotFound, ...): errors with the
// same code match.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error returns the message with the code.
func (e *Error) Error() string { return fmt.Sprintf("a2a: %s (code %d)", e.Message, e.Code) }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == e.Code
}

// Sentinels for errors.Is, one per code.
var (
	ErrParse                          = &Error{Code: CodeParseError, Message: "Invalid JSON payload"}
	ErrInvalidRequest                 = &Error{Code: CodeInvalidRequest, Message: "Request payload validation error"}
	ErrMethodNotFound                 = &Error{Code: CodeMethodNotFound, Message: "Method not found"}
	ErrInvalidParams                  = &Error{Code: CodeInvalidParams, Message: "Invalid parameters"}
	ErrInternal                       = &Error{Code: CodeInternalError, Message: "Internal error"}
	ErrTaskNotFound                   = &Error{Code: CodeTaskNotFound, Message: "Task not found"}
	ErrTaskNotCancelable              = &Error{Code: CodeTaskNotCancelable, Message: "Task cannot be canceled"}
	ErrPushNotificationNotSupported   = &Error{Code: CodePushNotificationNotSupported, Message: "Push notifications are not supported"}
	ErrUnsupportedOperation           = &Error{Code: CodeUnsupportedOperation, Message: "This operation is not supported"}
	ErrContentTypeNotSupported        = &Error{Code: CodeContentTypeNotSupported, Message: "Incompatible content types"}
	ErrInvalidAgentResponse           = &Error{Code: CodeInvalidAgentResponse, Message: "Invalid agent response"}
	ErrExtendedAgentCardNotConfigured = &Error{Code: CodeExtendedAgentCardNotConfigured, Message: "Extended agent card not configured"}
	ErrExtensionSupportRequired       = &Error{Code: CodeExtensionSupportRequired, Message: "Extension support required"}
	ErrVersionNotSupported            = &Error{Code: CodeVersionNotSupported, Message: "Version not supported"}
	ErrUnauthenticated                = &Error{Code: CodeUnauthenticated, Message: "Unauthenticated"}
)

// reasons are the ErrorInfo reasons of the A2A errors.
var reasons = map[int]string{
	CodeTaskNotFound:                   "TASK_NOT_FOUND",
	CodeTaskNotCancelable:              "TASK_NOT_CANCELABLE",
	CodePushNotificationNotSupported:   "PUSH_NOTIFICATION_NOT_SUPPORTED",
	CodeUnsupportedOperation:           "UNSUPPORTED_OPERATION",
	CodeContentTypeNotSupported:        "CONTENT_TYPE_NOT_SUPPORTED",
	CodeInvalidAgentResponse:           "INVALID_AGENT_RESPONSE",
	CodeExtendedAgentCardNotConfigured: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
	CodeExtensionSupportRequired:       "EXTENSION_SUPPORT_REQUIRED",
	CodeVersionNotSupported:            "VERSION_NOT_SUPPORTED",
	CodeUnauthenticated:                "UNAUTHENTICATED",
}

// errorf returns an error like base with a message saying more; the
// message is clipped, and A2A errors carry a google.rpc.ErrorInfo detail.
func errorf(base *Error, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if len(msg) > maxErrorMessage {
		msg = msg[:maxErrorMessage] + "…"
	}
	e := &Error{Code: base.Code, Message: base.Message + ": " + msg}
	if reason, ok := reasons[base.Code]; ok {
		e.Data, _ = json.Marshal([]map[string]any{{"@type": errorInfoType, "reason": reason, "domain": errorDomain}})
	}
	return e
}

// rpcRequest is a JSON-RPC request as received.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// rpcResponse is a JSON-RPC response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// parseRequest decodes one JSON-RPC request. The id it returns is the
// request's when it had a usable one, else null, so that an error can
// still be answered. A batch is refused: A2A defines none.
func parseRequest(body []byte) (rpcRequest, *Error) {
	null := json.RawMessage("null")
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return rpcRequest{ID: null}, errorf(ErrInvalidRequest, "the body is empty")
	}
	if !json.Valid(body) {
		return rpcRequest{ID: null}, errorf(ErrParse, "the body is not valid JSON")
	}
	if body[0] != '{' {
		return rpcRequest{ID: null}, errorf(ErrInvalidRequest, "the body must be one JSON-RPC request object (A2A has no batches)")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return rpcRequest{ID: null}, errorf(ErrInvalidRequest, "%v", err)
	}
	req := rpcRequest{ID: null}
	if id, ok := members["id"]; ok {
		switch id = bytes.TrimSpace(id); {
		case len(id) > 0 && (id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9')):
			if len(id) > 256 {
				return req, errorf(ErrInvalidRequest, "the id is longer than 256 bytes")
			}
			req.ID = id
		case bytes.Equal(id, null):
		default:
			return req, errorf(ErrInvalidRequest, "the id must be a string or a number")
		}
	} else {
		// A notification: A2A has none, and every method answers.
		return req, errorf(ErrInvalidRequest, "the request has no id")
	}
	if v, ok := members["jsonrpc"]; !ok || string(bytes.TrimSpace(v)) != `"2.0"` {
		return req, errorf(ErrInvalidRequest, `"jsonrpc" must be "2.0"`)
	}
	m, ok := members["method"]
	if !ok || json.Unmarshal(m, &req.Method) != nil || req.Method == "" {
		return req, errorf(ErrInvalidRequest, `"method" must be a non-empty string`)
	}
	if p, ok := members["params"]; ok {
		p = bytes.TrimSpace(p)
		if !bytes.Equal(p, null) {
			if p[0] != '{' {
				return req, errorf(ErrInvalidParams, "params must be an object")
			}
			req.Params = p
		}
	}
	req.JSONRPC = jsonrpcVersion
	return req, nil
}

// decodeParams decodes a request's params into v (an empty object when
// absent).
func decodeParams(params json.RawMessage, v any) *Error {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return errorf(ErrInvalidParams, "%s", describeJSONError(err))
	}
	return nil
}

// describeJSONError says what is wrong with a JSON value in words a caller
// can act on.
func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("%s: want %s, got %s", te.Field, te.Type, te.Value)
		}
		return fmt.Sprintf("want %s, got %s", te.Type, te.Value)
	}
	return err.Error()
}
