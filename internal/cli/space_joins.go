package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/space"
)

// defaultJoinWait is how long `mew space up` waits for the participants it
// started to join before it reports (--wait).
const defaultJoinWait = 30 * time.Second

// joinReport is what became of each participant `mew space up` started.
type joinReport struct {
	joined  []string
	failed  map[string]string // id → the cause, in words
	exited  []string          // ended with status 0 before joining: a one-shot command, not a failure
	pending []string          // neither joined nor failed within the wait
}

// awaitJoins waits, at most wait, until every participant started has
// joined the space (the gateway lists it connected) or failed (its process
// exited and was given up on, or exited and has not joined since). It
// records the outcome in the state file.
func (rs *runningSpace) awaitJoins(ctx context.Context, wait time.Duration) joinReport {
	rep := joinReport{failed: map[string]string{}}
	started := rs.startedList()
	if len(started) == 0 || wait <= 0 {
		return rep
	}
	left := map[string]bool{}
	for _, id := range started {
		left[id] = true
	}
	deadline := time.Now().Add(wait)
	hc := &http.Client{Timeout: 2 * time.Second}
	for len(left) > 0 && ctx.Err() == nil && time.Now().Before(deadline) {
		connected := connectedParticipants(ctx, hc, rs.launch.GatewayURL(), rs.cfg.Space.ID)
		procs := rs.processes(rs.startedList())
		for id := range left {
			switch p := procs[id]; {
			case connected[id]:
				rep.joined = append(rep.joined, id)
				rs.setJoined(id)
				delete(left, id)
			case p.Exits > 0 && !p.running && strings.HasPrefix(p.LastError, "exited") && !p.GaveUp:
				rep.exited = append(rep.exited, id)
				delete(left, id)
			case p.GaveUp || (p.Exits > 0 && !p.running):
				rep.failed[id] = p.LastError
				delete(left, id)
			}
		}
		if len(left) > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	for _, id := range started {
		if left[id] {
			rep.pending = append(rep.pending, id)
		}
	}
	rs.writeState()
	return rep
}

// print writes the report: who joined, who failed and why, who has not
// joined yet.
func (r joinReport) print(w io.Writer, wait time.Duration) {
	if len(r.joined) > 0 {
		fmt.Fprintf(w, "joined: %s\n", strings.Join(r.joined, ", "))
	}
	for _, id := range slices.Sorted(maps.Keys(r.failed)) {
		fmt.Fprintf(w, "failed: %s: %s\n", id, r.failed[id])
	}
	if len(r.exited) > 0 {
		fmt.Fprintf(w, "exited without joining (status 0): %s\n", strings.Join(r.exited, ", "))
	}
	if len(r.pending) > 0 {
		fmt.Fprintf(w, "not joined after %v: %s (see their logs; mew space status shows restarts and errors)\n", wait, strings.Join(r.pending, ", "))
	}
}

// connectedParticipants asks the gateway which participants are connected,
// by logical name.
func connectedParticipants(ctx context.Context, hc *http.Client, gatewayURL, spaceID string) map[string]bool {
	base := strings.Replace(strings.Replace(gatewayURL, "ws://", "http://", 1), "wss://", "https://", 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/participants?space="+url.QueryEscape(spaceID), nil)
	if err != nil {
		return nil
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var body struct {
		Participants []struct {
			ID        string `json:"id"`
			Name      string `json:"name"`
			Connected bool   `json:"connected"`
		} `json:"participants"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&body) != nil {
		return nil
	}
	out := map[string]bool{}
	for _, p := range body.Participants {
		if p.Connected {
			out[p.ID] = true
			if p.Name != "" {
				out[p.Name] = true
			}
		}
	}
	return out
}

// procState is a participant's process as the supervisor and its log tell.
type procState struct {
	space.RunProcess
	running bool
}

// processes returns how each participant of started fares, the last
// error with the last line its log wrote (where the cause usually is).
func (rs *runningSpace) processes(started []string) map[string]procState {
	out := map[string]procState{}
	for _, p := range rs.sup.State() {
		if !slices.Contains(started, p.Name) {
			continue
		}
		ps := procState{running: p.Running, RunProcess: space.RunProcess{Exits: p.Exits, Restarts: p.Restarts, GaveUp: p.GaveUp}}
		if p.Exits > 0 {
			ps.LastError = p.LastExit
			if line := strings.TrimSpace(tail(p.Log, 1)); line != "" {
				ps.LastError += ": " + clip.Runes(line, 240)
			}
		}
		out[p.Name] = ps
	}
	return out
}

// startedList is a copy of the participants started so far.
func (rs *runningSpace) startedList() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.started)
}

// setJoined records that id joined the space.
func (rs *runningSpace) setJoined(id string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.joined == nil {
		rs.joined = map[string]bool{}
	}
	rs.joined[id] = true
}

// reportFromState prints the joins the detached supervisor recorded and
// returns the participants that failed.
func reportFromState(w io.Writer, st *space.RunState, wait time.Duration) []string {
	if wait <= 0 {
		return nil // up did not wait: it knows nothing of the joins
	}
	rep := joinReport{failed: map[string]string{}}
	for _, id := range slices.Sorted(maps.Keys(st.Processes)) {
		p := st.Processes[id]
		switch {
		case p.Joined:
			rep.joined = append(rep.joined, id)
		case p.Exits > 0 && !p.GaveUp && strings.HasPrefix(p.LastError, "exited"):
			rep.exited = append(rep.exited, id)
		case p.Exits > 0 || p.GaveUp:
			rep.failed[id] = p.LastError
		default:
			rep.pending = append(rep.pending, id)
		}
	}
	rep.print(w, wait)
	return slices.Sorted(maps.Keys(rep.failed))
}

// statusProcess prints, for `mew space status`, a participant's restarts
// and last error under its row.
func statusProcess(w io.Writer, p space.RunProcess) {
	if p.Exits == 0 && !p.GaveUp {
		return
	}
	what := "restarts: " + strconv.Itoa(p.Restarts)
	if p.GaveUp {
		what += ", given up (it exited too often)"
	}
	fmt.Fprintf(w, "%-24s %8s  %s\n", "", "", what)
	if p.LastError != "" {
		fmt.Fprintf(w, "%-24s %8s  last error: %s\n", "", "", p.LastError)
	}
}
