package gateway

// The Host allow-list. A web page of another site can reach a gateway that
// listens on loopback or a private address by DNS rebinding: its name
// resolves to the attacker's server first, then to 127.0.0.1, and the
// browser, which only compares names, lets the page read the answers. Such
// a request carries the page's own name in its Host header, so the gateway
// serves only the names it knows (Options.AllowedHosts) and answers others
// 421 Misdirected Request, before any route: the API, the console, the
// metrics and WebSocket upgrades alike.
//
// An IP literal cannot be rebound: a page whose origin is http://10.0.0.5
// is served by 10.0.0.5 itself. So besides the configured names, the loopback
// names and addresses are served, the address the connection reached (what
// the client dialed), and, when the gateway listens on every address
// (0.0.0.0 or ::, where the addresses that reach it are not known in
// advance: NAT, containers), any IP literal.

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
)

// ErrorMisdirected is the error code of a request whose Host header names
// a host the gateway does not serve (HTTP 421).
const ErrorMisdirected = "misdirected_request"

// maxHostLen bounds the Host header the guard looks at: a DNS name is at
// most 253 characters, an IPv6 literal with a port far less.
const maxHostLen = 261

// hostGuard decides which Host headers are served.
type hostGuard struct {
	any      bool            // "*" was listed: the check is off
	names    map[string]bool // exact names, lower case, without a trailing dot
	suffixes []string        // ".example.com" for "*.example.com"
	addrs    map[netip.Addr]bool
	anyIP    atomic.Bool // a listener listens on every address
}

// newHostGuard compiles Options.AllowedHosts.
func newHostGuard(allowed []string) (*hostGuard, error) {
	g := &hostGuard{names: map[string]bool{"localhost": true}, addrs: map[netip.Addr]bool{}}
	for _, h := range allowed {
		if err := g.add(h); err != nil {
			return nil, fmt.Errorf("gateway: allowed host %q: %w", h, err)
		}
	}
	return g, nil
}

func (g *hostGuard) add(h string) error {
	h = strings.TrimSpace(h)
	switch {
	case h == "*":
		g.any = true
		return nil
	case strings.HasPrefix(h, "*."):
		name, ok := hostName(h[2:])
		if !ok {
			return fmt.Errorf("not *. followed by a host name")
		}
		g.suffixes = append(g.suffixes, "."+name)
		return nil
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); err == nil {
		if a.Zone() != "" {
			return fmt.Errorf("an address with a zone cannot be named in a Host header")
		}
		g.addrs[a.Unmap()] = true
		return nil
	}
	if strings.Contains(h, ":") {
		return fmt.Errorf("list the host without a port: every port is served")
	}
	name, ok := hostName(h)
	if !ok {
		return fmt.Errorf("not a host name (ASCII letters, digits, '-', '_' and dots; an internationalized name in its xn-- form), an IP address, *.NAME or *")
	}
	g.names[name] = true
	return nil
}

// hostName returns s as a host name is compared, lower case without a
// trailing dot, and whether it is one.
func hostName(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if s == "" || len(s) > 253 {
		return "", false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 {
			return "", false
		}
		for _, c := range []byte(label) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return "", false
			}
		}
	}
	return s, true
}

// listening notes an address a listener of the server listens on.
func (g *hostGuard) listening(a net.Addr) {
	if ta, ok := a.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		g.anyIP.Store(true)
	}
}

// allows reports whether r's Host header names a host the gateway serves.
func (g *hostGuard) allows(r *http.Request) bool {
	if g.any {
		return true
	}
	host, ok := splitHost(r.Host)
	if !ok {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return false
		}
		a = a.Unmap()
		return a.IsLoopback() || g.addrs[a] || g.anyIP.Load() || a == localAddr(r)
	}
	name, ok := hostName(host)
	if !ok {
		return false
	}
	if g.names[name] {
		return true
	}
	for _, s := range g.suffixes {
		if len(name) > len(s) && strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// splitHost returns the host of a Host header without its port (and an
// IPv6 literal without its brackets), and false for one that is not a
// host, a host and a port, or a bracketed IPv6 literal with or without a
// port.
func splitHost(h string) (string, bool) {
	if h == "" || len(h) > maxHostLen {
		return "", false
	}
	host, port := h, ""
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", false
		}
		host, port = h[1:end], h[end+1:]
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return "", false
		}
		if port != "" {
			p, ok := strings.CutPrefix(port, ":")
			if !ok {
				return "", false
			}
			port = p
		} else {
			return host, true
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		host, port = h[:i], h[i+1:]
		if strings.Contains(host, ":") {
			return "", false // an IPv6 literal must be bracketed
		}
	} else {
		return host, true
	}
	if host == "" || !validPort(port) {
		return "", false
	}
	return host, true
}

// validPort reports whether p is a port number, 0 to 65535.
func validPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	n := 0
	for _, c := range []byte(p) {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n <= 65535
}

// localAddr is the address r's connection reached, or the zero Addr.
func localAddr(r *http.Request) netip.Addr {
	a, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return netip.Addr{}
	}
	return ip.Unmap()
}

// hostHandler answers requests whose Host the gateway does not serve 421,
// before they reach any route.
func (srv *Server) hostHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !srv.hosts.allows(r) {
			srv.metrics.refusals.WithLabelValues(ErrorMisdirected).Inc()
			writeError(w, http.StatusMisdirectedRequest, ErrorMisdirected, "this gateway does not serve the host this request names; list it with --allowed-host (Options.AllowedHosts)")
			return
		}
		next.ServeHTTP(w, r)
	})
}
