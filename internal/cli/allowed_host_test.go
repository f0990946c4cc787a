package cli

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/internal/testutil"
)

// hostStatus asks the gateway at addr for /health with the Host header
// host and returns the status.
func hostStatus(t *testing.T, addr, host string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/health", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := testutil.HTTPDo(t, req, map[string]string{"Host": host})
	return resp.StatusCode
}

// TestGatewayStartAllowedHost: mew gateway start serves the names of
// --allowed-host (repeatable, patterns too) and of MEW_ALLOWED_HOSTS, which
// is how the gateway mew space up starts learns them, besides localhost
// and the listen address; another name is answered 421.
func TestGatewayStartAllowedHost(t *testing.T) {
	t.Setenv("MEW_ALLOWED_HOSTS", " from-env.example , ")
	path := writeSpace(t, "space: {id: hosts}\nparticipants:\n  me: {tokens: [me-token], capabilities: [{kind: chat}]}\n")
	g := startGatewayCmd(t, "-s", path, "--allowed-host", "gw.example.com", "--allowed-host", "*.corp.example")
	for host, want := range map[string]int{
		g.addr:                 http.StatusOK,
		"localhost":            http.StatusOK,
		"gw.example.com:443":   http.StatusOK,
		"a.corp.example":       http.StatusOK,
		"from-env.example":     http.StatusOK,
		"evil.example":         http.StatusMisdirectedRequest,
		"corp.example":         http.StatusMisdirectedRequest,
		"gw.example.com.evil":  http.StatusMisdirectedRequest,
		"from-env.example.org": http.StatusMisdirectedRequest,
	} {
		if got := hostStatus(t, g.addr, host); got != want {
			t.Errorf("Host %q: %d, want %d", host, got, want)
		}
	}
}

// TestGatewayStartAllowedHostEveryAddress: a gateway started with --host
// 0.0.0.0 serves any IP address as Host, and still no other name.
func TestGatewayStartAllowedHostEveryAddress(t *testing.T) {
	path := writeSpace(t, "space: {id: hosts}\nparticipants:\n  me: {tokens: [me-token], capabilities: [{kind: chat}]}\n")
	g := startGatewayCmd(t, "-s", path, "--host", "0.0.0.0")
	_, port, err := net.SplitHostPort(g.addr)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + port
	for host, want := range map[string]int{
		"192.0.2.1:" + port: http.StatusOK,
		"[2001:db8::1]":     http.StatusOK,
		"evil.example":      http.StatusMisdirectedRequest,
	} {
		if got := hostStatus(t, addr, host); got != want {
			t.Errorf("Host %q: %d, want %d", host, got, want)
		}
	}
}

// TestGatewayStartAllowedHostBad: an --allowed-host that names no host,
// or names one with a port, is refused before the gateway starts.
func TestGatewayStartAllowedHostBad(t *testing.T) {
	path := writeSpace(t, "space: {id: hosts}\nparticipants:\n  me: {capabilities: [{kind: chat}]}\n")
	for _, h := range []string{"gw.example.com:8080", "http://gw.example.com", "bad name", "*."} {
		_, _, err := run(t, Options{}, "gateway", "start", "-p", "0", "-s", path, "--allowed-host", h)
		if err == nil || !strings.Contains(err.Error(), "allowed host") {
			t.Errorf("--allowed-host %q: %v, want it refused", h, err)
		}
	}
}

// TestSpaceUpAllowedHosts: the gateway mew space up starts inherits
// MEW_ALLOWED_HOSTS, the documented way to serve the name a reverse proxy
// forwards to a space run on 127.0.0.1.
func TestSpaceUpAllowedHosts(t *testing.T) {
	dir := spaceDir(t, "space: {id: proxied}\nparticipants:\n  human: {tokens: [human-token], capabilities: [{kind: chat}]}\n")
	if out, errOut, err := mewEnv(t, dir, cleanEnv("MEW_ALLOWED_HOSTS=gw.example.com"), "space", "up", "--detach", "-p", "0"); err != nil {
		t.Fatalf("space up: %v\n%s%s", err, out, errOut)
	}
	st, err := upState(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(st.Port)
	for host, want := range map[string]int{
		"gw.example.com": http.StatusOK,
		addr:             http.StatusOK,
		"evil.example":   http.StatusMisdirectedRequest,
	} {
		if got := hostStatus(t, addr, host); got != want {
			t.Errorf("Host %q: %d, want %d", host, got, want)
		}
	}
	if out, err := mew(t, dir, "space", "down"); err != nil {
		t.Errorf("space down: %v\n%s", err, out)
	}
}
