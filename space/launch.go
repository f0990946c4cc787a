package space

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Launch describes how `mew space up` starts a space's processes: which
// binary is mew, the gateway's port, and the environment to expand.
type Launch struct {
	// Config is the space.
	Config *Config
	// Executable is the mew binary: it runs the gateway and the bridges,
	// and takes the place of a participant's command "mew".
	Executable string
	// Port is the gateway's port.
	Port int
	// LogLevel is passed to the gateway (-l).
	LogLevel string
	// Environ is the environment the processes inherit (nil means
	// os.Environ()), and where ${VAR} is looked up.
	Environ []string
}

// LogDir returns the directory of the processes' logs: <space dir>/logs.
func (l Launch) LogDir() string { return filepath.Join(l.Config.SpaceDir(), "logs") }

// GatewayURL returns the WebSocket URL participants connect to.
func (l Launch) GatewayURL() string { return "ws://127.0.0.1:" + strconv.Itoa(l.Port) }

// environ returns the inherited environment.
func (l Launch) environ() []string {
	if l.Environ != nil {
		return l.Environ
	}
	return os.Environ()
}

// lookup finds name in the inherited environment.
func (l Launch) lookup(name string) string {
	prefix := name + "="
	env := l.environ()
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], prefix); ok {
			return v
		}
	}
	return ""
}

// Gateway returns the gateway's process.
func (l Launch) Gateway() Process {
	args := []string{"gateway", "start", "-p", strconv.Itoa(l.Port), "--host", "127.0.0.1", "-s", l.Config.Path}
	if l.LogLevel != "" {
		args = append(args, "-l", l.LogLevel)
	}
	return Process{
		Name:    "gateway",
		Path:    l.Executable,
		Args:    args,
		Env:     l.environ(),
		Dir:     l.Config.SpaceDir(),
		Log:     filepath.Join(l.LogDir(), "gateway.log"),
		Restart: RestartAlways,
	}
}

// Participant returns the process that runs participant p with token, and
// false when p is not started with the space: it needs auto_start, and a
// command, or (type mcp-bridge) an mcp_server, or (type a2a-bridge) an
// a2a_url, which runs `mew bridge start --a2a-url`. In the command, its args and
// the mcp_server's, ${PORT}, ${SPACE} and ${TOKEN} are replaced by the
// gateway's port, the space id and p's token, and nothing else is (a shell
// command keeps its own $VAR); env values are expanded fully: those three
// and any ${VAR} of the environment. A command "mew", the participant's or
// its mcp_server's, is this mew. The process also gets
// MEW_GATEWAY, MEW_SPACE, MEW_PARTICIPANT_ID, MEW_TOKEN and
// MEW_TOKEN_<ID>, so that `mew agent run` and `mew bridge start` need no
// flags (and no token on their command line).
func (l Launch) Participant(p *Participant, token string) (Process, bool, error) {
	if !p.AutoStart {
		return Process{}, false, nil
	}
	vars := map[string]string{"PORT": strconv.Itoa(l.Port), "SPACE": l.Config.Space.ID, "TOKEN": token}
	// Arguments get the three placeholders only (a shell command keeps its
	// own $VARs); environment values are expanded fully.
	placeholders := strings.NewReplacer("${PORT}", vars["PORT"], "${SPACE}", vars["SPACE"], "${TOKEN}", token)
	arg := placeholders.Replace
	expand := func(s string) string {
		return os.Expand(s, func(name string) string {
			if v, ok := vars[name]; ok {
				return v
			}
			return l.lookup(name)
		})
	}
	env := append([]string(nil), l.environ()...)
	for _, e := range p.Env {
		env = append(env, e.Name+"="+expand(e.Value))
	}
	env = append(env,
		"MEW_GATEWAY="+l.GatewayURL(),
		"MEW_SPACE="+l.Config.Space.ID,
		"MEW_PARTICIPANT_ID="+p.ID,
		"MEW_TOKEN="+token,
		EnvName(p.ID)+"="+token,
	)
	if t := l.Config.Defaults.ProposalTimeout; t > 0 {
		env = append(env, "MEW_PROPOSAL_TIMEOUT="+t.String())
	}
	proc := Process{
		Name:    p.ID,
		Env:     env,
		Dir:     l.Config.SpaceDir(),
		Log:     filepath.Join(l.LogDir(), p.ID+".log"),
		Restart: RestartPolicy(p.RestartPolicy),
	}
	switch {
	case p.Type == "mcp-bridge" && p.MCPServer != nil && p.Command == "":
		s := p.MCPServer
		if s.URL != "" {
			// The bridge reads the URL and its auth from the file: no
			// credential goes on a command line.
			proc.Path = l.Executable
			proc.Args = []string{"bridge", "start", "-g", l.GatewayURL(), "-s", l.Config.Space.ID, "-p", p.ID, "--space-config", l.Config.Path}
			break
		}
		if s.Command == "" {
			return Process{}, false, fmt.Errorf("space: participant %s: mcp_server has no command or url", p.ID)
		}
		command := arg(s.Command)
		if command == "mew" {
			command = l.Executable
		}
		proc.Path = l.Executable
		proc.Args = []string{"bridge", "start", "-g", l.GatewayURL(), "-s", l.Config.Space.ID, "-p", p.ID, "-m", command}
		if len(s.Args) > 0 {
			args := make([]string, len(s.Args))
			for i, a := range s.Args {
				args[i] = arg(a)
			}
			proc.Args = append(proc.Args, "--mcp-args", strings.Join(args, ","))
		}
		if len(s.Env) > 0 {
			kv := make([]string, len(s.Env))
			for i, e := range s.Env {
				kv[i] = e.Name + "=" + expand(e.Value)
			}
			proc.Args = append(proc.Args, "--mcp-env", strings.Join(kv, ","))
		}
		if s.Cwd != "" {
			proc.Args = append(proc.Args, "--mcp-cwd", l.Config.Resolve(arg(s.Cwd)))
		}
	case p.Type == TypeA2ABridge && p.A2AURL != "" && p.Command == "":
		proc.Path = l.Executable
		proc.Args = []string{"bridge", "start", "-g", l.GatewayURL(), "-s", l.Config.Space.ID, "-p", p.ID, "--a2a-url", p.A2AURL}
		if len(p.A2AAnswerers) > 0 {
			proc.Args = append(proc.Args, "--answerers", strings.Join(p.A2AAnswerers, ","))
		}
	case p.Command != "":
		proc.Path = arg(p.Command)
		if proc.Path == "mew" {
			proc.Path = l.Executable
		}
		for _, a := range p.Args {
			proc.Args = append(proc.Args, arg(a))
		}
	default:
		return Process{}, false, fmt.Errorf("space: participant %s: auto_start without a command (or a type: mcp-bridge mcp_server, or a type: a2a-bridge a2a_url)", p.ID)
	}
	return proc, true, nil
}
