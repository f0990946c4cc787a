package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// webOptions are what `mew space connect --web` needs.
type webOptions struct {
	Gateway string // ws:// or wss:// URL of the gateway
	Space   string
	Token   string
	Getenv  func(string) string
	// Open opens a URL in a browser; nil means xdg-open when there is a
	// display. Tests set it.
	Open func(ctx context.Context, url string) error
}

// openWebConsole asks the gateway for a one-time link to the web console
// for this participant, prints it and opens it when it can. The link's code
// sits in the URL's fragment, which browsers do not send to the server; the
// page removes it from the address bar and history once it has read it,
// and the gateway accepts it once, within minutes.
func openWebConsole(ctx context.Context, cmd *cobra.Command, o webOptions) error {
	base, err := httpBase(o.Gateway)
	if err != nil {
		return fmt.Errorf("space connect --web: %w", err)
	}
	link, err := requestConsoleLink(ctx, base, o.Space, o.Token)
	if err != nil {
		return fmt.Errorf("space connect --web: %w", err)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "open the web console of %s (the link works once, for %s):\n%s\n", o.Space, link.ttl, link.url)
	open := o.Open
	if open == nil {
		open = func(ctx context.Context, u string) error { return xdgOpen(ctx, u, o.Getenv) }
	}
	if err := open(ctx, link.url); err != nil {
		// Opening is a convenience: the link is printed either way.
		fmt.Fprintf(cmd.ErrOrStderr(), "(could not open a browser: %v)\n", err)
	}
	return nil
}

// httpBase turns a gateway's WebSocket URL into its HTTP base URL.
func httpBase(gw string) (string, error) {
	u, err := url.Parse(gw)
	if err != nil {
		return "", fmt.Errorf("gateway URL: %w", err)
	}
	switch u.Scheme {
	case "ws", "http":
		u.Scheme = "http"
	case "wss", "https":
		u.Scheme = "https"
	default:
		return "", fmt.Errorf("gateway URL %q: want ws://, wss://, http:// or https://", gw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("gateway URL %q has no host", gw)
	}
	u.Path, u.RawQuery, u.Fragment, u.User = "", "", "", nil
	return strings.TrimSuffix(u.String(), "/"), nil
}

type consoleLink struct {
	url string
	ttl time.Duration
}

// requestConsoleLink is POST /console/links with the participant's token.
func requestConsoleLink(ctx context.Context, base, spaceID, token string) (consoleLink, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/console/links?space="+url.QueryEscape(spaceID), nil)
	if err != nil {
		return consoleLink{}, fmt.Errorf("console link: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return consoleLink{}, fmt.Errorf("console link: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return consoleLink{}, fmt.Errorf("console link: %w", err)
	}
	var v struct {
		Path      string `json:"path"`
		ExpiresAt string `json:"expires_at"`
		Message   string `json:"message"`
	}
	_ = json.Unmarshal(body, &v)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return consoleLink{}, fmt.Errorf("the gateway at %s serves no web console (started with --no-console?)", base)
	case resp.StatusCode != http.StatusCreated:
		return consoleLink{}, fmt.Errorf("console link: the gateway answered %s: %s", resp.Status, v.Message)
	case !strings.HasPrefix(v.Path, "/console/#"):
		return consoleLink{}, fmt.Errorf("console link: unexpected answer %.200q", body)
	}
	l := consoleLink{url: base + v.Path, ttl: 2 * time.Minute}
	if t, err := time.Parse(time.RFC3339Nano, v.ExpiresAt); err == nil {
		l.ttl = time.Until(t).Round(time.Second)
	}
	return l, nil
}

// xdgOpen opens u with xdg-open when there is one and a display to open it
// on.
func xdgOpen(ctx context.Context, u string, getenv func(string) string) error {
	if getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "" {
		return fmt.Errorf("no display")
	}
	path, err := exec.LookPath("xdg-open")
	if err != nil {
		return fmt.Errorf("no xdg-open: %w", err)
	}
	// xdg-open hands the URL to the browser and returns; the bound keeps a
	// misbehaving one from holding the command.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := exec.CommandContext(ctx, path, u).Run(); err != nil {
		return fmt.Errorf("xdg-open: %w", err)
	}
	return nil
}
