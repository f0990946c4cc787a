package auditlog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/mew-protocol/mew/internal/auditfmt"
)

// The logs of a directory, as the gateway names them.
const (
	EnvelopeHistory     = auditfmt.EnvelopeHistory
	CapabilityDecisions = auditfmt.CapabilityDecisions
)

// Files lists the files of the log name (EnvelopeHistory or
// CapabilityDecisions) in dir: the rotated ones oldest first, then the
// current one. Names that merely look similar are ignored. A directory
// without the log gives an empty list.
func Files(dir, name string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type rotated struct {
		path string
		at   time.Time
	}
	var rs []rotated
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if at, ok := auditfmt.RotatedTime(e.Name(), name); ok {
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
