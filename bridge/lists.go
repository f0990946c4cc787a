package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/protocol"
)

// lists is what the server listed, and who it is.
type lists struct {
	info      *mcp.Implementation
	protocol  string // the MCP revision agreed on with the server
	tools     []*mcp.Tool
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	prompts   []*mcp.Prompt
}

// Kinds of list, as bits of Bridge.pending; bitSuspect asks the supervisor
// to check that the server still answers.
const (
	bitTools uint32 = 1 << iota
	bitResources
	bitPrompts
	bitSuspect
)

// Limits on what a server may list, so that a hostile or broken one cannot
// make the bridge page forever or hold unbounded lists.
const (
	maxPages = 100
	maxItems = 10000
)

// listNotifications are the MCP notifications the bridge broadcasts in the
// space when a list of the server changes, by bit.
var listNotifications = map[uint32]string{
	bitTools:     "notifications/tools/list_changed",
	bitResources: "notifications/resources/list_changed",
	bitPrompts:   "notifications/prompts/list_changed",
}

// page lists one page: the items and the next cursor.
type page[T any] func(ctx context.Context, cursor string) ([]T, string, error)

// listAll follows the pages of a list, refusing a cursor seen before and
// stopping at maxPages pages or maxItems items.
func listAll[T any](ctx context.Context, what string, next page[T]) ([]T, error) {
	var out []T
	seen := map[string]bool{}
	cursor := ""
	for range maxPages {
		items, nc, err := next(ctx, cursor)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", what, err)
		}
		out = append(out, items...)
		if len(out) > maxItems {
			// A copy: the first maxItems of out would keep every item
			// listed alive, as long as the lists are kept.
			return slices.Clone(out[:maxItems]), nil
		}
		if nc == "" {
			return out, nil
		}
		if seen[nc] {
			return nil, fmt.Errorf("listing %s: the server repeats the cursor %q", what, nc)
		}
		seen[nc] = true
		cursor = nc
	}
	return out, nil
}

func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	return listAll(ctx, "tools", func(ctx context.Context, cursor string) ([]*mcp.Tool, string, error) {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Tools, res.NextCursor, nil
	})
}

func listResources(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Resource, error) {
	return listAll(ctx, "resources", func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
		res, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Resources, res.NextCursor, nil
	})
}

func listTemplates(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.ResourceTemplate, error) {
	return listAll(ctx, "resource templates", func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
		res, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.ResourceTemplates, res.NextCursor, nil
	})
}

func listPrompts(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Prompt, error) {
	return listAll(ctx, "prompts", func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
		res, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Prompts, res.NextCursor, nil
	})
}

// fetch lists what the server's capabilities say it has: the kinds in
// which (bits), into l.
func fetch(ctx context.Context, cs *mcp.ClientSession, which uint32, l *lists) error {
	caps := &mcp.ServerCapabilities{}
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	var err error
	if which&bitTools != 0 && caps.Tools != nil {
		if l.tools, err = listTools(ctx, cs); err != nil {
			return err
		}
	}
	if which&bitResources != 0 && caps.Resources != nil {
		if l.resources, err = listResources(ctx, cs); err != nil {
			return err
		}
		if l.templates, err = listTemplates(ctx, cs); err != nil {
			return err
		}
	}
	if which&bitPrompts != 0 && caps.Prompts != nil {
		if l.prompts, err = listPrompts(ctx, cs); err != nil {
			return err
		}
	}
	return nil
}

// differs returns the bits of the lists that differ between a and b.
func differs(a, b *lists) uint32 {
	var bits uint32
	if !sameJSON(a.tools, b.tools) {
		bits |= bitTools
	}
	if !sameJSON(a.resources, b.resources) || !sameJSON(a.templates, b.templates) {
		bits |= bitResources
	}
	if !sameJSON(a.prompts, b.prompts) {
		bits |= bitPrompts
	}
	return bits
}

// sameJSON reports whether two lists encode alike.
func sameJSON(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}

// refresh lists again the kinds in bits from the current server and, for
// those that changed, tells the space.
func (b *Bridge) refresh(ctx context.Context, r *run, bits uint32) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.InitTimeout)
	defer cancel()
	b.mu.Lock()
	next := b.lists
	b.mu.Unlock()
	if err := fetch(ctx, r.session, bits, &next); err != nil {
		b.log.Warn("refreshing the server's lists", "err", err)
		return
	}
	b.mu.Lock()
	if b.cur != r {
		b.mu.Unlock()
		return
	}
	changed := differs(&b.lists, &next)
	b.lists = next
	b.notifyLocked()
	b.mu.Unlock()
	b.log.Info("the server's lists changed", "tools", len(next.tools), "resources", len(next.resources), "prompts", len(next.prompts))
	b.announce(ctx, changed)
}

// announce broadcasts, for each list in bits, the MCP list_changed
// notification as an mcp/request, so that participants that discovered
// the bridge's tools list them again. Capabilities that do not allow it
// are logged, not an error.
func (b *Bridge) announce(ctx context.Context, bits uint32) {
	for _, bit := range []uint32{bitTools, bitResources, bitPrompts} {
		if bits&bit == 0 {
			continue
		}
		method := listNotifications[bit]
		env, err := protocol.New(protocol.KindMCPRequest, map[string]string{"jsonrpc": "2.0", "method": method})
		if err != nil {
			continue
		}
		if !b.p.CanSend(env.Kind, env.Payload) {
			b.log.Info("list change not announced: the capabilities do not allow it", "method", method)
			continue
		}
		if err := b.p.Send(ctx, env); err != nil {
			b.log.Warn("announcing a list change", "method", method, "err", err)
			continue
		}
		b.log.Info("list change announced", "method", method)
	}
}
