package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/mew-protocol/mew/internal/summary"
	"github.com/mew-protocol/mew/protocol"
)

// A proposed file write is previewed as a diff against the file as it is,
// when the target offers a read_file tool and the user may call it: the
// dialog asks for the file with an mcp/request of its own.

// fileReaders are the tools that read a file by path, in order of
// preference.
var fileReaders = []string{"read_text_file", "read_file"}

// maxDiffInput bounds the lines of each side that are compared; longer
// files are previewed by their content, not a diff.
const maxDiffInput = 2000

// oldFileMsg brings the file a proposal would overwrite.
type oldFileMsg struct {
	p    *proposal
	text string
	err  error // the file could not be read: it does not exist, or the call failed
}

// readOldFile returns the command that reads the file p would write, or
// nil when p is not a file write or its target cannot read it for me.
func (a *approvals) readOldFile(p *proposal) tea.Cmd {
	if p.tool != "write_file" || len(p.to) != 1 || p.oldAsked {
		return nil
	}
	var args struct {
		Path *string `json:"path"`
	}
	if json.Unmarshal(p.args, &args) != nil || args.Path == nil {
		return nil
	}
	reader := ""
	for _, r := range fileReaders {
		if slices.Contains(p.tools, r) {
			reader = r
			break
		}
	}
	if reader == "" {
		return nil
	}
	payload, err := json.Marshal(map[string]any{"method": "tools/call", "params": map[string]any{"name": reader, "arguments": map[string]string{"path": *args.Path}}})
	if err != nil || !a.e.sp.CanSend(protocol.KindMCPRequest, p.to, payload) {
		return nil
	}
	p.oldAsked = true
	// The read is the UI's own business: its request and answer stay out
	// of the transcript (request() looks the payload up here).
	a.quiet[p.to[0]+" "+string(payload)]++
	sp, ctx, target := a.e.sp, a.e.ctx, p.to[0]
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := sp.Call(ctx, target, payload)
		if err != nil {
			return oldFileMsg{p: p, err: err}
		}
		text, isErr := summary.Result(res)
		if isErr {
			return oldFileMsg{p: p, err: fmt.Errorf("%s", text)}
		}
		return oldFileMsg{p: p, text: text}
	}
}

// gotOldFile takes in the file a proposal would overwrite.
func (a *approvals) gotOldFile(msg oldFileMsg) {
	p := msg.p
	if msg.err != nil {
		p.oldErr = msg.err
		return
	}
	var args struct {
		Content string `json:"content"`
	}
	_ = json.Unmarshal(p.args, &args)
	p.diff = unifiedDiff(msg.text, args.Content, 3)
	p.oldKnown = true
}

// unifiedDiff returns the lines of a unified diff from a to b with ctx
// lines of context (no file headers), or nil when they are the same or too
// long to compare.
func unifiedDiff(a, b string, ctx int) []string {
	if a == b {
		return []string{}
	}
	al, bl := splitLines(a), splitLines(b)
	if len(al) > maxDiffInput || len(bl) > maxDiffInput {
		return nil
	}
	// The longest common subsequence, by dynamic programming from the end.
	lcs := make([][]int32, len(al)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(bl)+1)
	}
	for i := len(al) - 1; i >= 0; i-- {
		for j := len(bl) - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-', '+'
		text string
		ai   int // line numbers (from 0) in a and b before this op
		bi   int
	}
	var ops []op
	i, j := 0, 0
	for i < len(al) || j < len(bl) {
		switch {
		case i < len(al) && j < len(bl) && al[i] == bl[j]:
			ops = append(ops, op{' ', al[i], i, j})
			i, j = i+1, j+1
		case i < len(al) && (j == len(bl) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', al[i], i, j})
			i++
		default:
			ops = append(ops, op{'+', bl[j], i, j})
			j++
		}
	}
	// Hunks: the changes with ctx lines around them, close ones merged.
	var out []string
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := max(k-ctx, 0)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		var na, nb int
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				na++
			}
			if o.kind != '-' {
				nb++
			}
		}
		out = append(out, fmt.Sprintf("@@ -%d,%d +%d,%d @@", ops[start].ai+1, na, ops[start].bi+1, nb))
		for _, o := range ops[start:end] {
			out = append(out, string(o.kind)+o.text)
		}
		k = end
	}
	return out
}

// splitLines splits s into lines without their line breaks; "" is no line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// quietRequest reports whether env is one of the UI's own reads, and
// forgets it.
func (a *approvals) quietRequest(env *protocol.Envelope) bool {
	if env.From != a.e.me() || len(env.To) != 1 || len(a.quiet) == 0 {
		return false
	}
	var msg protocol.MCPMessage
	if env.DecodePayload(&msg) != nil {
		return false
	}
	payload, err := json.Marshal(map[string]any{"method": msg.Method, "params": msg.Params})
	if err != nil {
		return false
	}
	k := env.To[0] + " " + string(payload)
	if a.quiet[k] == 0 {
		return false
	}
	if a.quiet[k]--; a.quiet[k] == 0 {
		delete(a.quiet, k)
	}
	return true
}
