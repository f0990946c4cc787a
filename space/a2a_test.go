package space

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// type: a2a-bridge with a2a_url runs `mew bridge start --a2a-url`; its
// env (credentials) reaches the process, never its arguments.
func TestA2ABridgeParticipant(t *testing.T) {
	dir := t.TempDir()
	cfg, err := Parse([]byte(`
space: {id: demo}
participants:
  human: {}
  helper:
    type: a2a-bridge
    auto_start: true
    a2a_url: https://agent.example.com/
    a2a_answerers: [human]
    env: {MEW_A2A_BEARER: "${HELPER_AGENT_TOKEN}"}
`), filepath.Join(dir, "space.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	h := cfg.Participant("helper")
	if h.A2AURL != "https://agent.example.com/" || len(h.A2AAnswerers) != 1 || h.A2AAnswerers[0] != "human" {
		t.Fatalf("participant %+v", h)
	}
	l := Launch{Config: cfg, Executable: "/bin/mew", Port: 4242, Environ: []string{"HELPER_AGENT_TOKEN=s3cret-token"}}
	p, ok, err := l.Participant(h, "tok")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if want := "bridge start -g ws://127.0.0.1:4242 -s demo -p helper --a2a-url https://agent.example.com/ --answerers human"; p.Path != "/bin/mew" || strings.Join(p.Args, " ") != want {
		t.Errorf("process %s %v", p.Path, p.Args)
	}
	if env := strings.Join(p.Env, "\n"); !strings.Contains(env, "MEW_A2A_BEARER=s3cret-token") || strings.Contains(strings.Join(p.Args, " "), "s3cret") {
		t.Errorf("env %s, args %v", env, p.Args)
	}
}

func TestA2ABridgeParseErrors(t *testing.T) {
	for _, tt := range []struct{ name, yaml, want string }{
		{"no url", "space: {id: s}\nparticipants:\n  a: {type: a2a-bridge}\n",
			`space.yaml:3: participants.a: type a2a-bridge needs a2a_url, the URL of the agent`},
		{"not http", "space: {id: s}\nparticipants:\n  a: {type: a2a-bridge, a2a_url: \"ftp://x/\"}\n",
			`space.yaml:3: participants.a.a2a_url: want the http(s) URL of an A2A agent, such as https://agent.example.com/`},
		{"no host", "space: {id: s}\nparticipants:\n  a: {type: a2a-bridge, a2a_url: \"https:///x\"}\n",
			`space.yaml:3: participants.a.a2a_url: want the http(s) URL of an A2A agent, such as https://agent.example.com/`},
		{"a password", "space: {id: s}\nparticipants:\n  a: {type: a2a-bridge, a2a_url: \"https://u:secret@x/\"}\n",
			`space.yaml:3: participants.a.a2a_url: the URL holds a user name or password; give credentials in env (MEW_A2A_BEARER, MEW_A2A_API_KEY)`},
		{"a list", "space: {id: s}\nparticipants:\n  a: {type: a2a-bridge, a2a_url: [x]}\n",
			`space.yaml:3: participants.a.a2a_url: want a string, got a list`},
		{"another type", "space: {id: s}\nparticipants:\n  a: {type: mcp-bridge, a2a_url: \"https://x/\"}\n",
			`space.yaml:3: participants.a: a2a_url and a2a_answerers are for type: a2a-bridge`},
		{"bad answerer", "space: {id: s}\nparticipants:\n  a: {type: a2a-bridge, a2a_url: \"https://x/\", a2a_answerers: [\"a/b\"]}\n",
			`space.yaml:3: participants.a.a2a_answerers[0]: invalid participant id: contains '/'`},
		{"answerers a string", "space: {id: s}\nparticipants:\n  a: {type: a2a-bridge, a2a_url: \"https://x/\", a2a_answerers: human}\n",
			`space.yaml:3: participants.a.a2a_answerers: want a list, got a string ("human")`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "")
			var ce *ConfigError
			if !errors.As(err, &ce) || err.Error() != tt.want {
				t.Errorf("error\n got  %v\n want %s", err, tt.want)
			}
		})
	}
}
