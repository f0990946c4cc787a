package auditlog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// NodeDirs returns the audit log directories of a space whose log
// directory is dir: dir itself, then the logs of the other gateway nodes a
// `mew space up --nodes N` space keeps in its node-I subdirectories, in
// node order. Only directories that hold a log are listed.
func NodeDirs(dir string) []string {
	var out []string
	if HasLogs(dir) {
		out = append(out, dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	var nodes []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "node-") && HasLogs(filepath.Join(dir, e.Name())) {
			nodes = append(nodes, e.Name())
		}
	}
	// node-2 before node-10.
	slices.SortFunc(nodes, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	for _, n := range nodes {
		out = append(out, filepath.Join(dir, n))
	}
	return out
}

// ScanDirs is Scan over the logs of several gateway nodes (NodeDirs): each
// node writes its own, so their records are merged by time, a node's own
// order kept among records of the same instant. With one directory it is
// Scan, which keeps nothing; with several, the records are held in memory
// until all are read.
func ScanDirs(ctx context.Context, dirs []string, name string, opts ReadOptions, fn func(*Record) error) (ScanStats, error) {
	if len(dirs) == 1 {
		return Scan(ctx, dirs[0], name, opts, fn)
	}
	var all ScanStats
	var recs []*Record
	for _, dir := range dirs {
		st, err := Scan(ctx, dir, name, opts, func(r *Record) error {
			recs = append(recs, r)
			return nil
		})
		all.Files += st.Files
		all.Lines += st.Lines
		all.Bytes += st.Bytes
		all.Records += st.Records
		all.Skipped += st.Skipped
		all.Problems = append(all.Problems, st.Problems...)
		if err != nil {
			return all, fmt.Errorf("%s: %w", dir, err)
		}
	}
	if len(all.Problems) > maxProblems {
		all.Problems = all.Problems[:maxProblems]
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Time.Before(recs[j].Time) })
	for _, r := range recs {
		if err := fn(r); err != nil {
			return all, err
		}
	}
	return all, nil
}

// BuildIndexDirs is BuildIndex over the logs of several gateway nodes,
// merged by time (ScanDirs), so that a lineage that crosses nodes (a grant
// accepted on one, the request it allowed on another) is traced whole.
func BuildIndexDirs(ctx context.Context, dirs []string, opts IndexOptions) (*Index, error) {
	ix := newIndex(opts)
	var err error
	ix.Envelopes, err = ScanDirs(ctx, dirs, EnvelopeHistory, opts.ReadOptions, func(r *Record) error {
		_, err := ix.addEnvelope(r)
		return err
	})
	if err != nil {
		return nil, err
	}
	ix.Decisions, err = ScanDirs(ctx, dirs, CapabilityDecisions, opts.ReadOptions, func(r *Record) error {
		ix.addDecision(r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ix, nil
}
