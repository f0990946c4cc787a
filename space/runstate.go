package space

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mew-protocol/mew/internal/proc"
)

// RunStateFile is the name of the state file of a running space, in its
// MewDir.
const RunStateFile = "pids.json"

// maxRunState bounds the state file read.
const maxRunState = 1 << 20

// RunState is what `mew space up` started, written to MewDir/pids.json so
// that `mew space status` and `mew space down` work from another shell. The
// reference's members come first, with its names.
type RunState struct {
	SpaceID   string         `json:"spaceId"`
	SpaceName string         `json:"spaceName"`
	SpaceDir  string         `json:"spaceDir"`
	Port      int            `json:"port"`
	Gateway   int            `json:"gateway"` // the gateway's pid
	Agents    map[string]int `json:"agents"`  // participants started: id → pid (0: not running)
	Clients   map[string]int `json:"clients"` // clients started for participants (none yet)

	// Supervisor is the pid of the process that started the others and
	// restarts them; stopping it stops the space.
	Supervisor int `json:"supervisor"`
	// Config is the space configuration file.
	Config string `json:"config"`
	// StartedAt is when the space came up.
	StartedAt time.Time `json:"startedAt"`
	// Nodes lists the gateway nodes of a space started with several
	// (mew space up --nodes), the first being Gateway on Port; empty for
	// one gateway.
	Nodes []RunNode `json:"nodes,omitempty"`
	// Processes says how each participant's process fares: restarts, the
	// last failure and its cause, whether it joined the space. `mew space
	// up` reports from it and `mew space status` shows it.
	Processes map[string]RunProcess `json:"processes,omitempty"`
}

// RunProcess is how one started participant fares.
type RunProcess struct {
	Exits     int    `json:"exits,omitempty"`      // times it exited on its own
	Restarts  int    `json:"restarts,omitempty"`   // restarts in the supervisor's window
	GaveUp    bool   `json:"gave_up,omitempty"`    // exited too often: not restarted any more
	LastError string `json:"last_error,omitempty"` // how it last exited, and the last line of its log
	Joined    bool   `json:"joined,omitempty"`     // it has joined the space at least once
}

// RunNode is one gateway node of a running space.
type RunNode struct {
	ID   string `json:"id"`   // its node id in the cluster
	Port int    `json:"port"` // where it listens on 127.0.0.1
	PID  int    `json:"pid"`  // 0 while it is not running
}

// ReadRunState reads the state file in mewDir; the error wraps
// fs.ErrNotExist when there is none.
func ReadRunState(mewDir string) (*RunState, error) {
	path := filepath.Join(mewDir, RunStateFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("space: run state: %w", err)
	}
	defer f.Close()
	var st RunState
	dec := json.NewDecoder(&limitedReader{f: f, n: maxRunState})
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("space: run state %s: %w", path, err)
	}
	return &st, nil
}

// limitedReader fails instead of truncating at n bytes.
type limitedReader struct {
	f *os.File
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("larger than 1 MiB")
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= int64(n)
	return n, err
}

// Write writes the state file in mewDir, replacing it at once (a reader
// sees the old file or the new one, never a part).
func (st *RunState) Write(mewDir string) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("space: run state: %w", err)
	}
	if err := os.MkdirAll(mewDir, 0o755); err != nil {
		return fmt.Errorf("space: run state: %w", err)
	}
	tmp, err := os.CreateTemp(mewDir, ".pids-*.json")
	if err != nil {
		return fmt.Errorf("space: run state: %w", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("space: run state: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(mewDir, RunStateFile)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("space: run state: %w", err)
	}
	return nil
}

// RemoveRunState deletes the state file in mewDir, if any.
func RemoveRunState(mewDir string) error {
	err := os.Remove(filepath.Join(mewDir, RunStateFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("space: run state: %w", err)
	}
	return nil
}

// Running reports whether the state names a supervisor that is alive.
func (st *RunState) Running() bool {
	return st != nil && proc.Alive(st.Supervisor)
}

// PIDs returns every pid the state names: supervisor, gateway nodes,
// participants and clients.
func (st *RunState) PIDs() []int {
	pids := []int{st.Supervisor, st.Gateway}
	for _, n := range st.Nodes {
		if n.PID != st.Gateway {
			pids = append(pids, n.PID)
		}
	}
	for _, m := range []map[string]int{st.Agents, st.Clients} {
		for _, pid := range m {
			pids = append(pids, pid)
		}
	}
	return pids
}
