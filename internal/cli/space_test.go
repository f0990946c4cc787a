package cli

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/internal/proc"

	"github.com/mew-protocol/mew/space"
)

var (
	mewOnce sync.Once
	mewPath string
	mewErr  error
	mewDir  string
)

// mewBinary builds cmd/mew once for the tests that run the real binary.
func mewBinary(t *testing.T) string {
	t.Helper()
	mewOnce.Do(func() {
		mewDir, mewErr = os.MkdirTemp("", "mew-bin-")
		if mewErr != nil {
			return
		}
		mewPath = filepath.Join(mewDir, "mew")
		out, err := exec.Command("go", "build", "-o", mewPath, "github.com/mew-protocol/mew/cmd/mew").CombinedOutput()
		if err != nil {
			mewErr = err
			mewPath = string(out)
		}
	})
	if mewErr != nil {
		t.Fatalf("building mew: %v\n%s", mewErr, mewPath)
	}
	return mewPath
}

// mew runs the built binary with args in dir and returns its output.
func mew(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, mewBinary(t), args...)
	c.Dir = dir
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	return out.String(), err
}

const upSpace = `
space: {id: cli-space}
participants:
  human: {tokens: [human-token], capabilities: [{kind: "*"}]}
  watcher:
    tokens: [watcher-token]
    auto_connect: true
    output_log: ./logs/watcher.jsonl
    capabilities: [{kind: chat}]
  crasher:
    auto_start: true
    command: /bin/sh
    args: [-c, "echo run; sleep 0.2; exit 1"]
  sleeper:
    auto_start: true
    command: /bin/sh
    args: [-c, "echo up $${SPACE} $${PORT} $${MEW_TOKEN}; exec sleep 600"]
    env: {}
`

// upState reads the run state of the space in dir that `space up
// --detach` started and, when it could, terminates every process it names
// when the test ends: whatever happens, a test leaves nothing behind.
func upState(t *testing.T, dir string) (*space.RunState, error) {
	st, err := space.ReadRunState(dir)
	if err == nil {
		t.Cleanup(func() {
			for _, pid := range st.PIDs() {
				proc.Terminate(pid, true)
			}
		})
	}
	return st, err
}

// spaceDown runs mew space down in dir, which must say that the space id
// stopped, and checks that none of pids survived it.
func spaceDown(t *testing.T, dir, id string, pids []int) {
	t.Helper()
	out, err := mew(t, dir, "space", "down")
	if err != nil || !strings.Contains(out, "space "+id+" stopped") {
		t.Fatalf("down: %v\n%s", err, out)
	}
	for _, pid := range pids {
		if proc.Alive(pid) {
			t.Errorf("pid %d survived space down", pid)
		}
	}
}

func TestSpaceUpStatusDown(t *testing.T) {
	dir := spaceDir(t, strings.ReplaceAll(upSpace, "$$", "$"))
	// --wait 0: its participants are plain processes that never join
	// (TestSpaceUpReportsJoins has ones that do).
	out, err := mew(t, dir, "space", "up", "--detach", "-p", "0", "--wait", "0")
	if err != nil || !strings.Contains(out, "is up in the background") {
		t.Fatalf("space up: %v\n%s", err, out)
	}
	st, err := upState(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	pids := st.PIDs()
	if st.Supervisor == 0 || st.Gateway == 0 || st.Agents["sleeper"] == 0 || st.Port == 0 {
		t.Fatalf("state %+v", st)
	}
	for _, pid := range pids {
		if pid != 0 && !proc.Alive(pid) && pid != st.Agents["crasher"] {
			t.Errorf("pid %d is not running", pid)
		}
	}
	if again, err := mew(t, dir, "space", "up", "--detach", "-p", "0", "--wait", "0"); err == nil || !strings.Contains(again, "already running") {
		t.Errorf("a second up: %v\n%s", err, again)
	}

	status, err := mew(t, dir, "space", "status")
	if err != nil || !strings.Contains(status, "state:     running") || !strings.Contains(status, `"status":"ok"`) || !strings.Contains(status, "sleeper") {
		t.Errorf("status: %v\n%s", err, status)
	}

	// An envelope posted over HTTP reaches the output_log participant.
	url := "http://127.0.0.1:" + strconv.Itoa(st.Port) + "/participants/human/messages"
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"kind":"chat","payload":{"text":"hello watcher"}}`))
	req.Header.Set("Authorization", "Bearer human-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		t.Fatalf("post: %s", resp.Status)
	}
	waitFile(t, filepath.Join(dir, "logs", "watcher.jsonl"), `"text":"hello watcher"`, 1)

	// The crashing participant is restarted; the sleeper got its variables.
	waitFile(t, filepath.Join(dir, "logs", "crasher.log"), "run", 3)
	sleeperLog, _ := os.ReadFile(filepath.Join(dir, "logs", "sleeper.log"))
	if !strings.Contains(string(sleeperLog), "up cli-space "+strconv.Itoa(st.Port)+" ") {
		t.Errorf("sleeper log: %s", sleeperLog)
	}

	spaceDown(t, dir, "cli-space", pids)
	if _, err := os.Stat(filepath.Join(dir, space.RunStateFile)); err == nil {
		t.Error("pids.json survived space down")
	}
	if out, err := mew(t, dir, "space", "status"); err != nil || !strings.Contains(out, "not running") {
		t.Errorf("status after down: %v\n%s", err, out)
	}
	if out, err := mew(t, dir, "space", "down"); err != nil || !strings.Contains(out, "no space is running") {
		t.Errorf("second down: %v\n%s", err, out)
	}

	// clean: a dry run lists, then the logs go.
	out, err = mew(t, dir, "space", "clean", "--dry-run")
	if err != nil || !strings.Contains(out, "would delete "+filepath.Join(dir, "logs")) {
		t.Errorf("clean --dry-run: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs")); err != nil {
		t.Error("a dry run deleted the logs")
	}
	if out, err := mew(t, dir, "space", "clean", "--all"); err != nil || !strings.Contains(out, "deleted") {
		t.Errorf("clean: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs")); err == nil {
		t.Error("clean left the logs")
	}
	if _, err := os.Stat(filepath.Join(dir, "space.yaml")); err != nil {
		t.Error("clean deleted the configuration")
	}
}

// TestSpaceUpReportsJoins: `mew space up --detach` waits until every
// participant it started has joined or failed, and reports each: a bridged
// calculator joins; a bridge whose MCP server is not installed and a
// command that exits at once fail, with their causes, and up exits
// non-zero although the space runs; status shows the restarts and the
// last error.
func TestSpaceUpReportsJoins(t *testing.T) {
	y := `
space: {id: joins}
participants:
  human: {tokens: [human-token], capabilities: [{kind: "*"}]}
  calc:
    type: mcp-bridge
    auto_start: true
    mcp_server: {command: ` + mewBinary(t) + `, args: [mcp, calculator]}
  ghost:
    type: mcp-bridge
    auto_start: true
    mcp_server: {command: no-such-server-here}
  quitter:
    auto_start: true
    command: /bin/sh
    args: [-c, "echo the config is broken >&2; exit 3"]
`
	dir := spaceDir(t, y)
	// An earlier run's log that says "up" must not be taken for this run's.
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "logs", "space.log"), []byte("space joins is up: ws://127.0.0.1:1 (gateway pid 1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := mew(t, dir, "space", "up", "--detach", "-p", "0", "--wait", "20s")
	_, _ = upState(t, dir) // for its clean-up: the status below tells what ran
	if err == nil {
		t.Errorf("space up exited 0 with two failed participants:\n%s", out)
	}
	for _, want := range []string{
		"is up in the background", "joined: calc",
		`failed: ghost: exit status 1: mew: bridge: starting the MCP server: starting no-such-server-here: exec: "no-such-server-here": executable file not found`,
		"failed: quitter: exit status 3: the config is broken",
		"2 of its participants failed (ghost, quitter); the space keeps running",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("space up says nothing of %q:\n%s", want, out)
		}
	}
	status, err := mew(t, dir, "space", "status")
	if err != nil || !strings.Contains(status, "last error: exit status 3: the config is broken") || !strings.Contains(status, "restarts:") {
		t.Errorf("status: %v\n%s", err, status)
	}
	if out, err := mew(t, dir, "space", "down"); err != nil {
		t.Errorf("down: %v\n%s", err, out)
	}
}

func TestSpaceUpBadInput(t *testing.T) {
	dir := t.TempDir()
	if out, err := mew(t, dir, "space", "up", "--detach"); err == nil || !strings.Contains(out, "create one with mew init") || strings.Contains(out, "file does not exist") {
		t.Errorf("no config: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "space.yaml"), []byte("space: {id: x}\nparticipants:\n  a: {auto_start: true, colour: red}\n  b: {auto_start: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := mew(t, dir, "space", "up", "-p", "0")
	if err == nil || !strings.Contains(out, "auto_start without a command") {
		t.Errorf("auto_start without a command: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, space.RunStateFile)); err == nil {
		t.Error("a failed up left its state file")
	}
	for _, args := range [][]string{
		{"space", "up", "--detach", "-i"},
		{"space", "up", "-p", "70000"},
		{"space", "up", "-l", "loud"},
	} {
		if out, err := mew(t, dir, args...); err == nil {
			t.Errorf("%v accepted:\n%s", args, out)
		}
	}
}

// waitFile waits until path holds want at least n times.
func waitFile(t *testing.T, path, want string, n int) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; {
		data, _ := os.ReadFile(path)
		if strings.Count(string(data), want) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %q %d times, want %d:\n%s", path, want, strings.Count(string(data), want), n, data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSpaceUpInteractive: `space up -i` joins you to the space in the
// terminal; /quit stops the space and everything it started.
func TestSpaceUpInteractive(t *testing.T) {
	yaml := "space: {id: inter}\nparticipants:\n  human: {capabilities: [{kind: \"*\"}]}\n" +
		"  sleeper: {auto_start: true, command: /bin/sh, args: [-c, \"exec sleep 600\"]}\n"
	dir := spaceDir(t, yaml)
	it := startInteractive(t, dir, nil, "space", "up", "-i", "-p", "0")
	it.expect(t, "connected to inter as human")
	st, err := space.ReadRunState(dir)
	if err != nil {
		t.Fatal(err)
	}
	sleeper := st.Agents["sleeper"]
	if !proc.Alive(sleeper) {
		t.Fatalf("sleeper pid %d not running", sleeper)
	}
	it.stdin.Write([]byte("/quit\n"))
	if err := it.wait(t); err != nil {
		t.Errorf("exit: %v\n%s", err, it.out.String())
	}
	for _, pid := range st.PIDs() {
		if pid != it.c.Process.Pid && proc.Alive(pid) {
			t.Errorf("pid %d survived", pid)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, space.RunStateFile)); err == nil {
		t.Error("pids.json survived")
	}
}

// TestSpaceUpWarnsTypos: space up and gateway start name a misspelt key
// with its path and the key it resembles, and still start.
func TestSpaceUpWarnsTypos(t *testing.T) {
	yaml := "space: {id: typo}\nparticipants:\n  human:\n    capabilites: [{kind: \"*\"}]\n"
	dir := spaceDir(t, yaml)
	out, errOut, err := mewEnv(t, dir, cleanEnv(), "space", "up", "--detach", "-p", "0")
	if err != nil {
		t.Fatalf("space up: %v\n%s%s", err, out, errOut)
	}
	defer mewEnv(t, dir, cleanEnv(), "space", "down")
	if !strings.Contains(errOut, "unknown key participants.human.capabilites ignored (did you mean capabilities?)") {
		t.Errorf("space up did not warn:\n%s", errOut)
	}
	waitFile(t, filepath.Join(dir, "logs", "gateway.log"), `key=participants.human.capabilites did_you_mean=capabilities`, 1)
}

// TestSpaceDownStopsEscapees: a participant's descendant that leaves its
// process group with setsid (a daemonising server) is stopped by mew space
// down all the same, whether its parent still runs or has exited.
func TestSpaceDownStopsEscapees(t *testing.T) {
	y := `
space: {id: escapees}
participants:
  human: {tokens: [human-token]}
  stays:
    auto_start: true
    command: /bin/sh
    args: [-c, 'setsid sh -c "echo \$\$ > stays.pid; exec sleep 600" & exec sleep 600']
  leaves:
    auto_start: true
    restart_policy: "no"
    command: /bin/sh
    args: [-c, 'setsid sh -c "echo \$\$ > leaves.pid; exec sleep 600" & exit 0']
`
	dir := spaceDir(t, y)
	if out, err := mew(t, dir, "space", "up", "--detach", "-p", "0", "--wait", "0"); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	var pids []int
	for _, name := range []string{"stays.pid", "leaves.pid"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
				pids = append(pids, pid)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never written", name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	defer func() {
		for _, pid := range pids {
			proc.Terminate(pid, true)
		}
	}()
	for _, pid := range pids {
		if !proc.Alive(pid) {
			t.Fatalf("escaped process %d is not running before down", pid)
		}
	}
	if out, err := mew(t, dir, "space", "down"); err != nil {
		t.Fatalf("down: %v\n%s", err, out)
	}
	for _, pid := range pids {
		deadline := time.Now().Add(5 * time.Second)
		for proc.Alive(pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d, which escaped its group with setsid, outlived mew space down", pid)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
