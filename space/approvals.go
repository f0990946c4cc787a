package space

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/capability"
	"github.com/mew-protocol/mew/internal/yamlx"
)

// maxApprovalRules bounds the rules of a space: each proposal is matched
// against them in turn.
const maxApprovalRules = 256

// approvals reads the approvals list: rules in file order, each with a
// unique name, a match, approvers who are participants of the space, and a
// required count they can reach.
func (p *parser) approvals(n *yaml.Node, key string, c *Config) error {
	v := deref(n)
	if isNull(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		return yamlx.Errorf(n, key, "want a list of approval rules, got %s", describe(v))
	}
	if len(v.Content) > maxApprovalRules {
		return yamlx.Errorf(n, key, "%d rules: at most %d", len(v.Content), maxApprovalRules)
	}
	names := map[string]bool{}
	for i, item := range v.Content {
		k := indexKey(key, i)
		r := &ApprovalRule{Then: ThenTimeout}
		matched := false
		err := p.fields(item, k, r, map[string]yamlx.Reader{
			"match": func(v *yaml.Node, k string) (err error) {
				matched = !isNull(deref(v))
				r.Proposal, r.Request, err = approvalMatch(v, k)
				return err
			},
			"within_ms": func(v *yaml.Node, k string) (err error) {
				r.Within, err = milliseconds(v, k, 0, MaxApprovalWait)
				return err
			},
			"escalate": func(v *yaml.Node, k string) error {
				if isNull(deref(v)) {
					return nil
				}
				r.Escalate = &ApprovalStep{}
				return p.approvalStep(v, k, r.Escalate)
			},
		})
		if err != nil {
			return err
		}
		switch {
		case r.Name == "":
			return yamlx.Errorf(item, joinKey(k, "name"), "is required")
		case names[r.Name]:
			return yamlx.Errorf(item, joinKey(k, "name"), "%q names two rules", r.Name)
		case !matched:
			return yamlx.Errorf(item, joinKey(k, "match"), "is required: the proposals the rule applies to (a capability pattern without kind; {} for all)")
		case r.Then != ThenTimeout && r.Then != ThenEscalate:
			return yamlx.Errorf(item, joinKey(k, "then"), "want %s or %s, got %q", ThenTimeout, ThenEscalate, r.Then)
		case r.Then == ThenEscalate && r.Escalate == nil:
			return yamlx.Errorf(item, joinKey(k, "escalate"), "is required with then: %s", ThenEscalate)
		case r.Then == ThenEscalate && r.Within == 0:
			return yamlx.Errorf(item, joinKey(k, "within_ms"), "is required with then: %s (when to escalate)", ThenEscalate)
		}
		names[r.Name] = true
		if err := checkStep(item, k, &r.ApprovalStep, c); err != nil {
			return err
		}
		if r.Escalate != nil {
			if err := checkStep(item, joinKey(k, "escalate"), r.Escalate, c); err != nil {
				return err
			}
		}
		c.Approvals = append(c.Approvals, r)
	}
	return nil
}

func (p *parser) approvalStep(n *yaml.Node, key string, s *ApprovalStep) error {
	return p.fields(n, key, s, map[string]yamlx.Reader{
		"within_ms": func(v *yaml.Node, k string) (err error) {
			s.Within, err = milliseconds(v, k, 0, MaxApprovalWait)
			return err
		},
	})
}

// checkStep checks that a step's approvers are participants of the space,
// named once, and that required is one they can reach.
func checkStep(n *yaml.Node, key string, s *ApprovalStep, c *Config) error {
	if len(s.Approvers) == 0 {
		return yamlx.Errorf(n, joinKey(key, "approvers"), "is required: the participants who approve")
	}
	for i, a := range s.Approvers {
		if !slices.ContainsFunc(c.Participants, func(p *Participant) bool { return p.ID == a }) {
			return yamlx.Errorf(n, indexKey(joinKey(key, "approvers"), i), "%q is no participant of the space", a)
		}
		if slices.Index(s.Approvers, a) != i {
			return yamlx.Errorf(n, indexKey(joinKey(key, "approvers"), i), "%q is named twice", a)
		}
	}
	if s.Required == 0 {
		s.Required = 1
	}
	if s.Required < 1 || s.Required > len(s.Approvers) {
		return yamlx.Errorf(n, joinKey(key, "required"), "want 1 to %d (the approvers named), got %d", len(s.Approvers), s.Required)
	}
	return nil
}

// approvalMatch reads a rule's match, a capability pattern without kind,
// as the patterns of a proposal and of a request.
func approvalMatch(n *yaml.Node, key string) (proposal, request json.RawMessage, err error) {
	v := deref(n)
	if v == nil || v.Kind != yaml.MappingNode {
		return nil, nil, yamlx.Errorf(n, key, "want a capability pattern without kind, got %s", describe(v))
	}
	pairs, err := yamlx.Pairs(v, key)
	if err != nil {
		return nil, nil, err
	}
	for _, kv := range pairs {
		if kv.Key == "kind" {
			return nil, nil, yamlx.Errorf(kv.KeyNode, joinKey(key, "kind"), "leave kind out: a rule matches proposals (mcp/proposal), and with always_ask the requests (mcp/request) of the same shape")
		}
	}
	obj, err := yamlx.AppendObject(nil, pairs, key)
	if err != nil {
		return nil, nil, err
	}
	with := func(kind string) (json.RawMessage, error) {
		raw := []byte(`{"kind":"` + kind + `"`)
		if rest := strings.TrimSpace(string(obj[1:])); rest != "}" {
			raw = append(raw, ',')
		}
		raw = append(raw, obj[1:]...)
		if _, err := capability.Compile([]json.RawMessage{raw}); err != nil {
			var ce *capability.CompileError
			if errors.As(err, &ce) {
				return nil, &yamlx.Error{Line: v.Line, Path: key + strings.TrimPrefix(ce.Path, "[0]"), Err: compileError{ce}}
			}
			return nil, yamlx.Errorf(n, key, "%w", err)
		}
		return raw, nil
	}
	if proposal, err = with("mcp/proposal"); err != nil {
		return nil, nil, err
	}
	request, err = with("mcp/request")
	return proposal, request, err
}
