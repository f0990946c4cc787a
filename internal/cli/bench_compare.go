package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"
)

// metric is one number of a result, for --compare-to.
type metric struct {
	key   string  // JSON name
	label string  // table label
	value float64 // nanoseconds when dur
	dur   bool
}

// comparison is one metric of one target, now and in the saved run.
type comparison struct {
	Target string  `json:"target"`
	Metric string  `json:"metric"`
	New    float64 `json:"new"`
	Old    float64 `json:"old"`
	Ratio  float64 `json:"ratio"` // new/old; 0 when old is 0
	label  string
	dur    bool
}

// readSaved reads a report saved with --save (or printed with --json), before the run, so that a
// bad file costs no run. It refuses a file that is not such a report, one of another workload, and
// one whose options differ from o in anything but the duration and warmup: their numbers would
// not be comparable.
func readSaved[O, R any](path, workload string, o O) (*benchReport[O, R], error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--compare-to: %w", err)
	}
	var head struct {
		Workload string          `json:"workload"`
		Options  json.RawMessage `json:"options"`
		Results  json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("--compare-to %s: not a saved bench run: %w", path, err)
	}
	if head.Workload == "" || len(head.Results) == 0 {
		return nil, fmt.Errorf("--compare-to %s: not a saved bench run (no workload or results)", path)
	}
	if head.Workload != workload {
		return nil, fmt.Errorf("--compare-to %s: a %s run cannot be compared with this %s run", path, head.Workload, workload)
	}
	old := new(benchReport[O, R])
	if err := json.Unmarshal(data, old); err != nil {
		return nil, fmt.Errorf("--compare-to %s: malformed %s run: %w", path, workload, err)
	}
	if len(old.Results) == 0 {
		return nil, fmt.Errorf("--compare-to %s: the saved run has no results", path)
	}
	diff, err := optionDiff(o, head.Options)
	if err != nil {
		return nil, fmt.Errorf("--compare-to %s: %w", path, err)
	}
	if len(diff) > 0 {
		return nil, fmt.Errorf("--compare-to %s: the saved run had other options (%s)", path, strings.Join(diff, "; "))
	}
	return old, nil
}

// compareRuns compares the new results with the saved ones, target by target.
func compareRuns[O, R any](path string, old *benchReport[O, R], results []R, metrics func(R) (string, []metric)) ([]comparison, error) {
	saved := make(map[string][]metric, len(old.Results))
	for _, r := range old.Results {
		name, ms := metrics(r)
		saved[name] = ms
	}
	var out []comparison
	for _, r := range results {
		name, ms := metrics(r)
		was, ok := saved[name]
		if !ok {
			continue
		}
		for i, m := range ms {
			c := comparison{Target: name, Metric: m.key, New: m.value, Old: was[i].value, label: m.label, dur: m.dur}
			c.Ratio = quotient(c.New, c.Old)
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--compare-to %s: no target of this run is in it (it has %s)", path, strings.Join(slices.Sorted(maps.Keys(saved)), ", "))
	}
	return out, nil
}

// optionDiff names the options, other than duration and warmup, whose values differ between o and
// the saved JSON.
func optionDiff[O any](o O, saved json.RawMessage) ([]string, error) {
	now, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var a, b map[string]any
	if err := json.Unmarshal(now, &a); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(saved, &b); err != nil || b == nil {
		return nil, errors.New("malformed options in the saved run")
	}
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if k == "duration_ns" || k == "warmup_ns" {
			continue
		}
		if !reflect.DeepEqual(a[k], b[k]) {
			diff = append(diff, fmt.Sprintf("%s %v, now %v", k, b[k], a[k]))
		}
	}
	return diff, nil
}

// writeComparison writes the comparison as a table.
func writeComparison(w io.Writer, path string, cs []comparison) error {
	if _, err := fmt.Fprintf(w, "compared to %s:\n", path); err != nil {
		return err
	}
	t := newTable(w, "TARGET", "METRIC", "NEW", "OLD", "NEW/OLD")
	for _, c := range cs {
		t.row(c.Target, c.label, metricText(c.New, c.dur), metricText(c.Old, c.dur), fmt.Sprintf("%.2f", c.Ratio))
	}
	return t.flush()
}

func metricText(v float64, dur bool) string {
	if dur {
		return durText(time.Duration(v))
	}
	if v == float64(int64(v)) || v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// saveReport writes the report of a run to path, as --json prints it.
func saveReport(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--save: %w", err)
	}
	if err := errors.Join(write(f), f.Close()); err != nil {
		return fmt.Errorf("--save %s: %w", path, err)
	}
	return nil
}
