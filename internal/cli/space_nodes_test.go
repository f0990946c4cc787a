package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/internal/proc"
	"github.com/mew-protocol/mew/protocol"
	"github.com/mew-protocol/mew/space"
)

const nodesSpace = `
space: {id: cli-nodes}
participants:
  human: {tokens: [human-token], capabilities: [{kind: "*"}]}
  friend: {tokens: [friend-token], capabilities: [{kind: chat}]}
  s1: {auto_start: true, command: /bin/sh, args: [-c, "echo gw $${MEW_GATEWAY} port $${PORT}; exec sleep 600"]}
  s2: {auto_start: true, command: /bin/sh, args: [-c, "echo gw $${MEW_GATEWAY} port $${PORT}; exec sleep 600"]}
  s3: {auto_start: true, command: /bin/sh, args: [-c, "echo gw $${MEW_GATEWAY} port $${PORT}; exec sleep 600"]}
`

// TestSpaceUpNodes: mew space up --nodes 3 starts three gateway nodes of one cluster (the first
// with the embedded NATS server), prints each, spreads the participants it starts over them with
// every URL, serves a chat across nodes, and mew space down stops them all.
func TestSpaceUpNodes(t *testing.T) {
	dir := spaceDir(t, strings.ReplaceAll(nodesSpace, "$$", "$"))
	out, err := mew(t, dir, "space", "up", "--detach", "-p", "0", "--nodes", "3")
	if err != nil || !strings.Contains(out, "is up in the background") {
		t.Fatalf("space up --nodes 3: %v\n%s", err, out)
	}
	st, err := space.ReadRunState(dir)
	if err != nil {
		t.Fatal(err)
	}
	pids := st.PIDs()
	defer func() { // whatever happens, leave nothing behind
		for _, pid := range pids {
			proc.Terminate(pid, true)
		}
	}()
	if len(st.Nodes) != 3 || st.Nodes[0].Port != st.Port || st.Nodes[0].PID != st.Gateway {
		t.Fatalf("nodes %+v (port %d, gateway pid %d)", st.Nodes, st.Port, st.Gateway)
	}
	urls := runNodeURLs(st.Nodes)
	seen := map[int]bool{}
	for i, n := range st.Nodes {
		if n.ID != "node-"+strconv.Itoa(i+1) || n.PID == 0 || !proc.Alive(n.PID) || seen[n.Port] {
			t.Errorf("node %d: %+v", i, n)
		}
		seen[n.Port] = true
		line := "node " + n.ID + ": " + urls[i] + "  health http://127.0.0.1:" + strconv.Itoa(n.Port) + "/health"
		if !strings.Contains(out, line) {
			t.Errorf("the output lacks %q:\n%s", line, out)
		}
		// Each node answers for itself, and is in the cluster.
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(n.Port) + "/health")
		if err != nil {
			t.Fatal(err)
		}
		var h map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || h["node"] != n.ID {
			t.Errorf("node %s health: %s %v", n.ID, resp.Status, h)
		}
	}

	// The participants are spread round robin, each with every URL, its own node's first.
	for k, id := range []string{"s1", "s2", "s3"} {
		want := "gw " + strings.Join(append(append([]string(nil), urls[k:]...), urls[:k]...), ",") + " port " + strconv.Itoa(st.Nodes[k].Port)
		waitFile(t, filepath.Join(dir, "logs", id+".log"), want, 1)
	}

	// A chat on node 2 reaches a participant on node 3.
	join := func(token, url string) (*client.Client, chan string) {
		c, err := client.New(client.Options{Gateway: url, Space: "cli-nodes", Token: token})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		heard := make(chan string, 10)
		c.OnKind(protocol.KindChat, func(e *protocol.Envelope) {
			var ch protocol.Chat
			if e.DecodePayload(&ch) == nil {
				heard <- e.From + ": " + ch.Text
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		return c, heard
	}
	human, _ := join("human-token", urls[1])
	_, heard := join("friend-token", urls[2])
	env, _ := protocol.New(protocol.KindChat, protocol.Chat{Text: "across nodes"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The friend's join may reach node 2 a moment after its welcome: send until heard.
	for got := ""; got != "human: across nodes"; {
		env.ID = ""
		if err := human.Send(ctx, env); err != nil {
			t.Fatal(err)
		}
		select {
		case got = <-heard:
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the chat from node 2 never reached node 3")
		}
	}

	status, err := mew(t, dir, "space", "status")
	if err != nil || !strings.Contains(status, "gateway-node-2 :"+strconv.Itoa(st.Nodes[1].Port)) || !strings.Contains(status, "gateway-node-3") {
		t.Errorf("status: %v\n%s", err, status)
	}

	spaceDown(t, dir, "cli-nodes", pids)
}

func TestSpaceUpNodesBadInput(t *testing.T) {
	dir := spaceDir(t, "space: {id: x}\nparticipants:\n  a: {tokens: [t]}\n")
	for _, n := range []string{"0", "17", "-2"} {
		if out, err := mew(t, dir, "space", "up", "--detach", "--nodes", n); err == nil || !strings.Contains(out, "--nodes") {
			t.Errorf("--nodes %s: %v\n%s", n, err, out)
		}
	}
}
