package layers

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/mew-protocol/mew/"

// layer of each package of the module, from the ground up. A package may
// import only packages of lower layers (tests may import anything).
var layer = map[string]int{
	// Ground parts: no imports from the module but each other's.
	"internal/jsontape": 0, "internal/clip": 0, "internal/termtext": 0, "internal/mcpver": 0,
	"internal/proc": 0, "internal/templates": 0, "internal/argcheck": 0, "internal/yamlx": 0,
	"internal/mcpserver": 0, "internal/mcptest": 0, "internal/browsertest": 0, "internal/testpki": 0,
	"internal/mcpserve": 0, "internal/oauthclient": 0, "internal/jobs": 0, "internal/httpserve": 0,
	"internal/auditfmt": 0, "internal/auditfmt/auditfmttest": 0, // the audit format; its test vectors (tests only)
	"a2a":                0,
	"internal/oauthtest": 1, // a test authorisation server, over internal/oauthclient's types
	"protocol":           1,
	"capability":         2, "gateway/internal/audit": 2, "llm": 2,
	"gateway/cluster": 2, "gateway/cluster/memory": 3, "gateway/cluster/natscluster": 3, "gateway/cluster/clustertest": 3,
	"gateway/internal/clusterhist": 3, // the polling history of a cluster, over gateway/cluster
	"gateway/internal/clusterlink": 4, // a space's link to a cluster, over gateway/cluster and clusterhist
	"gateway/internal/notify":      0, // the approvals webhook's notifier: imports nothing of the module
	"client":                       3, "space": 3, "console": 3,
	"internal/feed":          4, // the envelope-to-event reading both terminal clients share
	"internal/feed/feedtest": 2, // the shared vectors, for tests
	"internal/lineclient":    5, // the line client of mew client connect
	"gateway":                5, "participant": 4,
	"agent": 5, "bridge": 5, "tui": 5, "a2abridge": 5,
	"toolsagent":        6,
	"console/studio":    7,
	"internal/summary":  2,
	"auditlog":          3,
	"internal/testutil": 7, "internal/bench": 7,
	"internal/cli": 8,
	"cmd/mew":      9, "internal/hostile": 9, // hostile: the hostile-peer suite, tests only
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func TestImportsRunDownward(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to list the packages: %v", err)
	}
	cmd := exec.Command("go", "list", "-json", module+"...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		if strings.HasPrefix(name, "examples/") || name == "internal/layers" {
			continue // examples stand on top of everything; this package holds only the test
		}
		n++
		l, ok := layer[name]
		if !ok {
			t.Errorf("%s is in no layer: add it to the table here and in docs/architecture.md", name)
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			dl, known := layer[dep]
			if known && (dl < l || (dl == 0 && l == 0)) {
				continue
			}
			t.Errorf("%s (layer %d) imports %s (layer %d): imports must run downward", name, l, dep, dl)
		}
	}
	if n < 20 {
		t.Fatalf("only %d packages listed", n)
	}
}
