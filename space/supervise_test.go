//go:build unix

package space

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mew-protocol/mew/internal/proc"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// shProc is a process running a shell script.
func shProc(t *testing.T, name, script, restart string) Process {
	dir := t.TempDir()
	return Process{Name: name, Path: "/bin/sh", Args: []string{"-c", script}, Env: os.Environ(), Dir: dir, Log: filepath.Join(dir, "logs", name+".log"), Restart: restart}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func stateOf(s *Supervisor, name string) ProcessState {
	for _, st := range s.State() {
		if st.Name == name {
			return st
		}
	}
	return ProcessState{}
}

func TestSupervisorRestartsAndGivesUp(t *testing.T) {
	var changes atomic.Int32
	s := NewSupervisor(SupervisorOptions{MinBackoff: 10 * time.Millisecond, MaxRestarts: 3, OnChange: func() { changes.Add(1) }})
	crasher := shProc(t, "crasher", "echo started; exit 3", RestartAlways)
	if err := s.Start(crasher); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done("crasher"):
	case <-time.After(10 * time.Second):
		t.Fatal("the crasher was restarted forever")
	}
	st := stateOf(s, "crasher")
	if !st.GaveUp || st.Running || st.Restarts != 3 {
		t.Errorf("state %+v", st)
	}
	log, _ := os.ReadFile(crasher.Log)
	if n := strings.Count(string(log), "started"); n != 4 {
		t.Errorf("started %d times, want 4 (1 + 3 restarts):\n%s", n, log)
	}
	if changes.Load() < 8 {
		t.Errorf("%d changes reported", changes.Load())
	}
	// A clean exit under on-failure is not restarted; under no, nothing is.
	for _, p := range []Process{shProc(t, "done", "exit 0", RestartOnFailure), shProc(t, "never", "exit 1", RestartNever)} {
		if err := s.Start(p); err != nil {
			t.Fatal(err)
		}
		<-s.Done(p.Name)
		if st := stateOf(s, p.Name); st.GaveUp || st.Restarts != 0 {
			t.Errorf("%s: %+v", p.Name, st)
		}
	}
	if err := s.Start(crasher); err == nil {
		t.Error("a second process with the same name started")
	}
	if err := s.Start(Process{Name: "missing", Path: "/nonexistent/program", Log: filepath.Join(t.TempDir(), "x.log")}); err == nil {
		t.Error("a missing program started")
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(shProc(t, "late", "sleep 1", RestartNever)); err == nil {
		t.Error("started after Stop")
	}
}

func TestSupervisorStopsGroups(t *testing.T) {
	s := NewSupervisor(SupervisorOptions{StopTimeout: 300 * time.Millisecond})
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	// A parent with a child in the background, and one that ignores SIGTERM.
	parent := shProc(t, "parent", "sleep 60 & echo $! > "+pidFile+"; wait", RestartAlways)
	stubborn := shProc(t, "stubborn", "trap '' TERM; while true; do sleep 0.05; done", RestartAlways)
	for _, p := range []Process{parent, stubborn} {
		if err := s.Start(p); err != nil {
			t.Fatal(err)
		}
	}
	var child int
	waitFor(t, "the child's pid", func() bool {
		b, err := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && child > 0
	})
	pids := []int{child, stateOf(s, "parent").PID, stateOf(s, "stubborn").PID}
	start := time.Now()
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stop took %v", d)
	}
	waitFor(t, "every process gone", func() bool {
		for _, pid := range pids {
			if proc.Alive(pid) {
				return false
			}
		}
		return true
	})
}

func TestRunState(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadRunState(dir); err == nil {
		t.Error("a missing state read")
	}
	st := &RunState{SpaceID: "s", Port: 8080, Gateway: 10, Supervisor: os.Getpid(), Agents: map[string]int{"a": 11}, StartedAt: time.Unix(1, 0).UTC()}
	if err := st.Write(dir); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRunState(dir)
	if err != nil || got.SpaceID != "s" || got.Agents["a"] != 11 || !got.Running() || len(got.PIDs()) != 3 {
		t.Errorf("read %+v, %v", got, err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, RunStateFile))
	if !strings.Contains(string(raw), `"spaceId": "s"`) || !strings.Contains(string(raw), `"agents": {`) {
		t.Errorf("file:\n%s", raw)
	}
	for _, bad := range []string{"{", "[]", strings.Repeat(" ", 2<<20) + "{}"} {
		if err := os.WriteFile(filepath.Join(dir, RunStateFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadRunState(dir); err == nil {
			t.Errorf("%.20q read", bad)
		}
	}
	if err := RemoveRunState(dir); err != nil {
		t.Fatal(err)
	}
	if err := RemoveRunState(dir); err != nil {
		t.Errorf("removing twice: %v", err)
	}
}

func TestLaunchParticipant(t *testing.T) {
	dir := t.TempDir()
	cfg, err := Parse([]byte(`
space: {id: demo}
participants:
  agent:
    auto_start: true
    command: mew
    args: [agent, run, -g, "ws://localhost:${PORT}", --token, "${TOKEN}", --home, "${HOME}"]
    env: {GREETING: "hi ${SPACE} ${HOME}"}
    restart_policy: on-failure
  fs:
    type: mcp-bridge
    auto_start: true
    mcp_server: {command: npx, args: [-y, server, "${PORT}"], env: {A: "1", B: "2"}, cwd: ./files}
  calc:
    type: mcp-bridge
    auto_start: true
    mcp_server: {command: mew, args: [mcp, calculator]}
  human: {}
  broken: {auto_start: true}
defaults: {proposal_timeout_ms: 5400000}
`), filepath.Join(dir, "space.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dir = dir
	l := Launch{Config: cfg, Executable: "/bin/mew", Port: 4242, Environ: []string{"HOME=/home/u", "MEW_TOKEN=stale"}}
	p, ok, err := l.Participant(cfg.Participant("agent"), "tok")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if p.Path != "/bin/mew" || strings.Join(p.Args, " ") != "agent run -g ws://localhost:4242 --token tok --home ${HOME}" || p.Restart != RestartOnFailure || p.Dir != dir {
		t.Errorf("agent process %+v", p)
	}
	env := strings.Join(p.Env, "\n")
	for _, want := range []string{"GREETING=hi demo /home/u", "MEW_GATEWAY=ws://127.0.0.1:4242", "MEW_TOKEN=tok", "MEW_TOKEN_AGENT=tok", "MEW_PARTICIPANT_ID=agent", "MEW_PROPOSAL_TIMEOUT=1h30m0s"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s:\n%s", want, env)
		}
	}
	if strings.LastIndex(env, "MEW_TOKEN=tok") < strings.LastIndex(env, "MEW_TOKEN=stale") {
		t.Error("the inherited MEW_TOKEN wins")
	}
	b, ok, err := l.Participant(cfg.Participant("fs"), "t2")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	want := "bridge start -g ws://127.0.0.1:4242 -s demo -p fs -m npx --mcp-args -y,server,4242 --mcp-env A=1,B=2 --mcp-cwd " + filepath.Join(dir, "files")
	if strings.Join(b.Args, " ") != want || b.Log != filepath.Join(dir, "logs", "fs.log") {
		t.Errorf("bridge process %v, log %s", b.Args, b.Log)
	}
	c, _, err := l.Participant(cfg.Participant("calc"), "t3")
	if err != nil || strings.Join(c.Args, " ") != "bridge start -g ws://127.0.0.1:4242 -s demo -p calc -m /bin/mew --mcp-args mcp,calculator" {
		t.Errorf("calc bridge %v, %v", c.Args, err)
	}
	if _, ok, err := l.Participant(cfg.Participant("human"), ""); ok || err != nil {
		t.Errorf("human: %v %v", ok, err)
	}
	if _, _, err := l.Participant(cfg.Participant("broken"), ""); err == nil {
		t.Error("auto_start without a command accepted")
	}
	g := l.Gateway()
	if strings.Join(g.Args, " ") != "gateway start -p 4242 --host 127.0.0.1 -s "+filepath.Join(dir, "space.yaml") {
		t.Errorf("gateway %v", g.Args)
	}
}

// TestSupervisorMissingDir: a process whose working directory is missing
// fails to start with an error that says so, not "fork/exec <path>: no
// such file or directory", which blames the program.
func TestSupervisorMissingDir(t *testing.T) {
	s := NewSupervisor(SupervisorOptions{})
	defer s.Stop(context.Background())
	missing := filepath.Join(t.TempDir(), "files")
	err := s.Start(Process{Name: "files", Path: "/bin/sh", Args: []string{"-c", "true"}, Dir: missing, Log: filepath.Join(t.TempDir(), "files.log")})
	if err == nil || !strings.Contains(err.Error(), "working directory") || !strings.Contains(err.Error(), missing) {
		t.Errorf("start in a missing directory: %v", err)
	}
}
