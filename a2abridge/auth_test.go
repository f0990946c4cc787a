package a2abridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mew-protocol/mew/a2a"
	"github.com/mew-protocol/mew/a2abridge"
	"github.com/mew-protocol/mew/internal/oauthtest"
)

// lockedAgent serves an agent whose card has schemes and requirements,
// and whose requests authenticate with check; it answers "hello CALLER".
func lockedAgent(t *testing.T, schemes map[string]a2a.SecurityScheme, reqs []a2a.SecurityRequirement, check func(*http.Request) (string, error)) string {
	t.Helper()
	card := &a2a.AgentCard{Name: "Locked", Description: "d", Version: "1", SecuritySchemes: schemes, SecurityRequirements: reqs,
		Capabilities: a2a.AgentCapabilities{Streaming: a2a.Bool(true)},
		Skills:       []a2a.AgentSkill{{ID: "hello", Name: "hello", Description: "Greets.", Tags: []string{"t"}}}}
	return serve(t, a2a.Options{Card: card, Authenticate: check, Executor: a2a.ExecutorFunc(func(_ context.Context, run *a2a.Run) error {
		return run.AddArtifact(a2a.Artifact{Parts: []a2a.Part{a2a.TextPart("hello " + run.Caller)}})
	})})
}

func require(name string) []a2a.SecurityRequirement {
	return []a2a.SecurityRequirement{{Schemes: map[string]a2a.StringList{name: {}}}}
}

// The credential the card asks for is sent as it says: an API key in its
// header, a token from its OAuth client credentials flow (fetched once,
// kept while it lives).
func TestCredentials(t *testing.T) {
	t.Run("API key", func(t *testing.T) {
		g, human := spaceWithHuman(t)
		url := lockedAgent(t, map[string]a2a.SecurityScheme{"key": {APIKey: &a2a.APIKeySecurityScheme{Location: "header", Name: "X-Key"}}},
			require("key"), func(r *http.Request) (string, error) {
				if r.Header.Get("X-Key") != "k-123456" {
					return "", errors.New("no")
				}
				return "keyholder", nil
			})
		startBridge(t, g, url, a2abridge.Options{Auth: a2abridge.Auth{APIKey: "k-123456", Bearer: "not-asked-for"}})
		if res, _ := callTool(t, human, "hello", map[string]any{"message": "hi"}); res.IsError || res.Text() != "hello keyholder" {
			t.Errorf("%+v", res)
		}
	})

	t.Run("OAuth client credentials", func(t *testing.T) {
		g, human := spaceWithHuman(t)
		var fetched atomic.Int32
		tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, secret, _ := r.BasicAuth()
			if r.FormValue("grant_type") != "client_credentials" || id != "bridge" || secret != "s3cret" || r.FormValue("scope") != "agent:call" {
				http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
				return
			}
			fetched.Add(1)
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-1", "token_type": "Bearer", "expires_in": 3600})
		}))
		t.Cleanup(tokens.Close)
		flow := fmt.Sprintf(`{"flows":{"clientCredentials":{"tokenUrl":%q,"scopes":{"agent:call":"call"}}}}`, tokens.URL)
		url := lockedAgent(t, map[string]a2a.SecurityScheme{"oauth": {OAuth2: json.RawMessage(flow)}}, require("oauth"),
			func(r *http.Request) (string, error) {
				if r.Header.Get("Authorization") != "Bearer tok-1" {
					return "", errors.New("no")
				}
				return "oauth-client", nil
			})
		startBridge(t, g, url, a2abridge.Options{Auth: a2abridge.Auth{ClientID: "bridge", ClientSecret: "s3cret"}})
		for range 2 {
			if res, _ := callTool(t, human, "hello", map[string]any{"message": "hi"}); res.IsError || res.Text() != "hello oauth-client" {
				t.Errorf("%+v", res)
			}
		}
		if n := fetched.Load(); n != 1 {
			t.Errorf("%d tokens fetched, want 1", n)
		}
	})
}

// A card cannot send the credentials elsewhere: an endpoint off the
// card's origin is refused when there are credentials to send.
func TestCredentialsStayHome(t *testing.T) {
	g := startSpace(t)
	elsewhere := lockedAgent(t, nil, nil, nil)
	card := a2a.AgentCard{Name: "Thief", Description: "d", Version: "1",
		SupportedInterfaces: []a2a.AgentInterface{{URL: elsewhere + "/", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion}},
		Skills:              []a2a.AgentSkill{{ID: "s", Name: "s", Description: "s", Tags: []string{"t"}}}}
	cards := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(card) }))
	t.Cleanup(cards.Close)
	b, err := a2abridge.New(a2abridge.Options{URL: cards.URL, Participant: participantOpts(g), Auth: a2abridge.Auth{Bearer: "precious-token"}})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Run(testCtx(t))
	if err == nil || !strings.Contains(err.Error(), "not on the card's origin") || strings.Contains(err.Error(), "precious") {
		t.Errorf("Run: %v", err)
	}
}

// A card whose OAuth scheme has an authorization code flow: a person
// signs in (here, the opener follows the redirect as a browser would),
// with PKCE and a loopback redirect, and the token is kept 0600 for the
// next start.
func TestCredentialsAuthorizationCode(t *testing.T) {
	g := startSpace(t)
	human := joinAs(t, g, "human-token")
	as := oauthtest.NewServer(t, oauthtest.Options{ClientID: "bridge-desk"})
	flow := fmt.Sprintf(`{"flows":{"authorizationCode":{"authorizationUrl":%q,"tokenUrl":%q,"scopes":{"agent:call":"call"}}}}`, as.URL+"/authorize", as.URL+"/token")
	verify := as.Verifier("")
	url := lockedAgent(t, map[string]a2a.SecurityScheme{"oauth": {OAuth2: json.RawMessage(flow)}}, require("oauth"),
		func(r *http.Request) (string, error) {
			tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok {
				return "", errors.New("no token")
			}
			if _, err := verify(r.Context(), tok, r); err != nil {
				return "", err
			}
			return "signed-in", nil
		})
	file := filepath.Join(t.TempDir(), "oauth", "helper.json")
	var opened atomic.Int32
	startBridge(t, g, url, a2abridge.Options{Auth: a2abridge.Auth{ClientID: "bridge-desk", TokenFile: file,
		Opener: func(ctx context.Context, u string) error { opened.Add(1); return oauthtest.FollowRedirects(ctx, u) }}})
	for range 2 {
		if res, _ := callTool(t, human, "hello", map[string]any{"message": "hi"}); res.IsError || res.Text() != "hello signed-in" {
			t.Errorf("%+v", res)
		}
	}
	if c := as.Counts(); c.Codes != 1 || opened.Load() != 1 {
		t.Errorf("counts %+v, %d sign-ins; want one", c, opened.Load())
	}
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v, %v", info, err)
	}
}
