package auditlog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The logs of a directory, as the gateway names them.
const (
	EnvelopeHistory     = "envelope-history.jsonl"
	CapabilityDecisions = "capability-decisions.jsonl"
)

// rotatedLayout is the time in a rotated file's name:
// envelope-history.20261122T100950.999Z.jsonl.
const rotatedLayout = "20060102T150405.000Z"

// Files lists the files of the log name (EnvelopeHistory or
// CapabilityDecisions) in dir: the rotated ones oldest first, then the
// current one. Names that merely look similar are ignored. A directory
// without the log gives an empty list.
func Files(dir, name string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	stem := strings.TrimSuffix(name, ".jsonl") + "."
	type rotated struct {
		path string
		at   time.Time
	}
	var rs []rotated
	for _, e := range entries {
		mid, ok := strings.CutPrefix(e.Name(), stem)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if mid, ok = strings.CutSuffix(mid, ".jsonl"); !ok {
			continue
		}
		if at, err := time.Parse(rotatedLayout, mid); err == nil && at.Format(rotatedLayout) == mid {
			rs = append(rs, rotated{filepath.Join(dir, e.Name()), at})
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].at.Before(rs[j].at) })
	files := make([]string, 0, len(rs)+1)
	for _, r := range rs {
		files = append(files, r.path)
	}
	path := filepath.Join(dir, name)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		files = append(files, path)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return files, nil
}

// HasLogs reports whether dir holds a file of either log, current or
// rotated.
func HasLogs(dir string) bool {
	for _, name := range []string{EnvelopeHistory, CapabilityDecisions} {
		if fs, err := Files(dir, name); err == nil && len(fs) > 0 {
			return true
		}
	}
	return false
}
