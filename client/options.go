package client

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mew-protocol/mew/protocol"
)

// Options configures a Client. Gateway, Token and Space (or a space named
// in Gateway's query) are required; the zero value of every other field
// means its documented default.
type Options struct {
	// Gateway is the gateway's URL: ws:// or wss:// (http:// and https:// are
	// accepted too). A URL without a path gets "/ws"; the space is added as
	// the query parameter "space".
	Gateway string
	// Gateways lists more URLs of the same space, one per gateway node of a
	// cluster, written as Gateway is; Gateway, when set, comes first.
	// Connect tries the URLs in order until one joins; once connected, a
	// dropped connection and each failed reconnect attempt move on to the
	// next URL, round robin, with the usual backoff (see the package
	// documentation). SplitGateways reads a comma-separated list.
	Gateways []string
	// Space is the id of the space to join. If a gateway URL already names
	// a space in its query, they must all agree.
	Space string
	// Token is the participant's token. It decides which participant of the
	// space the client is, and it is never logged.
	Token string
	// ParticipantID is the runtime id to join under; "" means the token's
	// participant name. An id other than that name becomes a runtime alias
	// of the participant (spec 3.6.4). Only the join message can carry it,
	// so a non-empty ParticipantID implies JoinMessage.
	ParticipantID string
	// JoinMessage makes the client authenticate with the reference clients'
	// join message {"type":"join","participantId","space","token"}, sent as
	// the first message, instead of an Authorization: Bearer header.
	JoinMessage bool

	// Reconnect makes the client dial again when a connection drops after
	// Connect succeeded (see the package documentation for when it does
	// not).
	Reconnect bool
	// ReconnectDelay is the backoff before the first attempt (default
	// 500ms); it doubles at each attempt, with ±20% jitter.
	ReconnectDelay time.Duration
	// MaxReconnectDelay caps the backoff (default 30s).
	MaxReconnectDelay time.Duration
	// MaxReconnectAttempts is how many attempts in a row the client makes
	// before giving up with ErrReconnectFailed; 0 means no limit.
	MaxReconnectAttempts int

	// HeartbeatInterval is how often the client pings the gateway (default
	// 30s); a ping not answered within the interval drops the connection.
	// A negative value disables the heartbeat.
	HeartbeatInterval time.Duration
	// WelcomeTimeout bounds one connection attempt: dialling, authenticating
	// and waiting for the welcome (default 10s).
	WelcomeTimeout time.Duration

	// SendQueue is the length of the outbound queue (default 1024 messages).
	// When it is full, Send waits for room until its context ends.
	SendQueue int
	// InboundQueue bounds the messages received but not yet handled
	// (default 4096). If the handlers fall that far behind, the connection
	// is dropped with ErrSlowConsumer.
	InboundQueue int
	// MaxMessageSize bounds one inbound message in bytes (default 16 MiB).
	// A larger one ends the connection (close 1009).
	MaxMessageSize int64

	// Logger receives the client's diagnostics; nil discards them. The token
	// never reaches it.
	Logger *slog.Logger
	// HTTPHeader holds extra headers for the WebSocket upgrade request. The
	// client sets Authorization itself (and removes it with JoinMessage).
	HTTPHeader http.Header
}

// Defaults of Options.
const (
	defaultReconnectDelay    = 500 * time.Millisecond
	defaultMaxReconnectDelay = 30 * time.Second
	defaultHeartbeat         = 30 * time.Second
	defaultWelcomeTimeout    = 10 * time.Second
	defaultSendQueue         = 1024
	defaultInboundQueue      = 4096
	defaultMaxMessageSize    = 16 << 20
	// maxGateways bounds the URL list: a cluster has a handful of nodes,
	// and a list read from a flag or a file must not cost without bound.
	maxGateways = 64
)

// check validates o and returns it with its defaults filled in.
func (o Options) check() (Options, error) {
	switch {
	case o.Gateway == "" && len(o.Gateways) == 0:
		return o, errors.New("the Gateway option is required")
	case len(o.Gateways) > maxGateways:
		return o, fmt.Errorf("the Gateways option lists more than %d URLs", maxGateways)
	case o.Token == "":
		return o, errors.New("the Token option is required")
	case len(o.ParticipantID) > protocol.MaxIDLen:
		return o, fmt.Errorf("the ParticipantID option is longer than %d bytes", protocol.MaxIDLen)
	case o.ReconnectDelay < 0, o.MaxReconnectDelay < 0, o.WelcomeTimeout < 0:
		return o, errors.New("durations must not be negative (except HeartbeatInterval)")
	case o.MaxReconnectAttempts < 0, o.SendQueue < 0, o.InboundQueue < 0, o.MaxMessageSize < 0:
		return o, errors.New("counts and sizes must not be negative")
	}
	// A zero field takes its default; cmp.Or keeps any other value,
	// including the negative HeartbeatInterval that turns heartbeats off.
	o.ReconnectDelay = cmp.Or(o.ReconnectDelay, defaultReconnectDelay)
	o.MaxReconnectDelay = max(cmp.Or(o.MaxReconnectDelay, defaultMaxReconnectDelay), o.ReconnectDelay)
	o.HeartbeatInterval = cmp.Or(o.HeartbeatInterval, defaultHeartbeat)
	o.WelcomeTimeout = cmp.Or(o.WelcomeTimeout, defaultWelcomeTimeout)
	o.SendQueue = cmp.Or(o.SendQueue, defaultSendQueue)
	o.InboundQueue = cmp.Or(o.InboundQueue, defaultInboundQueue)
	o.MaxMessageSize = cmp.Or(o.MaxMessageSize, defaultMaxMessageSize)
	if o.ParticipantID != "" {
		o.JoinMessage = true
	}
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	return o, nil
}

// gatewayList returns the gateway URLs of o in the order they are tried:
// Gateway, then Gateways.
func (o *Options) gatewayList() []string {
	var list []string
	if o.Gateway != "" {
		list = append(list, o.Gateway)
	}
	return append(list, o.Gateways...)
}

// dialURLs returns the URLs to dial, each with a path and the space; it
// sets o.Space from a URL's query when it was empty.
func (o *Options) dialURLs() ([]string, error) {
	list := o.gatewayList()
	if o.Space == "" {
		// A URL after the first may name the space the first leaves out.
		for _, g := range list {
			if u, err := url.Parse(g); err == nil && u.Query().Get("space") != "" {
				o.Space = u.Query().Get("space")
				break
			}
		}
	}
	urls := make([]string, 0, len(list))
	for i, g := range list {
		what := "the Gateway option"
		if len(list) > 1 {
			what = fmt.Sprintf("gateway URL %d", i+1)
		}
		u, err := o.dialURL(g)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		urls = append(urls, u)
	}
	return urls, nil
}

// dialURL returns the URL to dial for gateway g: g with a path and the
// space. It sets o.Space from g's query when it was empty.
func (o *Options) dialURL(g string) (string, error) {
	u, err := url.Parse(g)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "ws", "wss", "http", "https":
	default:
		return "", fmt.Errorf("scheme %q is not ws, wss, http or https", u.Scheme)
	}
	if u.Host == "" {
		return "", fmt.Errorf("%q has no host", g)
	}
	if u.User != nil {
		return "", errors.New("credentials in the URL are not supported; use Token")
	}
	if u.Path == "" && u.RawPath == "" {
		u.Path = "/ws"
	}
	q := u.Query()
	switch s := q.Get("space"); {
	case o.Space == "" && s == "":
		return "", errors.New("the Space option is required")
	case o.Space == "":
		o.Space = s
	case s != "" && s != o.Space:
		return "", fmt.Errorf("the URL names space %q but Space is %q", s, o.Space)
	}
	q.Set("space", o.Space)
	u.RawQuery = q.Encode()
	u.Fragment = ""
	return u.String(), nil
}

// SplitGateways splits a comma-separated list of gateway URLs, as the mew
// CLI's --gateway flags and MEW_GATEWAY take it, into the form of
// Options.Gateways: spaces around each URL are trimmed and empty items
// dropped. A URL holding a comma must escape it (%2C).
func SplitGateways(s string) []string {
	var list []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			list = append(list, item)
		}
	}
	return list
}

// joinMessage returns the reference clients' join message.
func (o *Options) joinMessage() []byte {
	b := append([]byte(nil), `{"type":"join"`...)
	if o.ParticipantID != "" {
		b = protocol.AppendString(append(b, `,"participantId":`...), o.ParticipantID)
	}
	b = protocol.AppendString(append(b, `,"space":`...), o.Space)
	b = protocol.AppendString(append(b, `,"token":`...), o.Token)
	return append(b, '}')
}

// upgradeHeader returns the headers of the upgrade request.
func (o *Options) upgradeHeader() http.Header {
	h := o.HTTPHeader.Clone()
	if h == nil {
		h = make(http.Header)
	}
	if o.JoinMessage {
		h.Del("Authorization")
	} else {
		h.Set("Authorization", "Bearer "+o.Token)
	}
	return h
}
