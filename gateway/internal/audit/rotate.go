package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/mew-protocol/mew/internal/auditfmt"
)

// Defaults of [Options.MaxFileSize] and [Options.MaxFiles]: with both, one
// log takes at most about 2.8 GB (the current file and ten rotated ones).
const (
	DefaultMaxFileSize = 256 << 20
	DefaultMaxFiles    = 10
)

// rotatedFile is a rotated log file and the time in its name.
type rotatedFile struct {
	path string
	at   time.Time
}

// findRotated lists the rotated files of the log at path, oldest first.
// Files whose names merely look alike (envelope-history.old.jsonl) are not
// the log's and are left alone.
func findRotated(path string) ([]rotatedFile, error) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("list rotated files: %w", err)
	}
	base := filepath.Base(path)
	var files []rotatedFile
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if t, ok := auditfmt.RotatedTime(e.Name(), base); ok {
			files = append(files, rotatedFile{path: filepath.Join(filepath.Dir(path), e.Name()), at: t})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].at.Before(files[j].at) })
	return files, nil
}

// rotate moves the full file of s aside under a name with the current time,
// opens a new one and deletes the rotated files beyond MaxFiles. It reports
// false when s is broken afterwards and the line at hand cannot be written.
// If only the rename fails, the current file is kept and grows past the
// limit until a later attempt succeeds: a line too many is better than a
// line lost.
func (w *writer) rotate(s *sink) bool {
	if !s.renameRetry.IsZero() && w.now().Before(s.renameRetry) {
		return true
	}
	if !w.flushSink(s) {
		return false
	}
	// A file that is rotated away is complete: make it durable before the
	// new file starts from its last hash.
	w.sync(s)
	rf := w.rotatedPath(s)
	name, at := rf.path, rf.at
	// Renamed while still open: on failure nothing has changed.
	if err := w.cfg.rename(s.path, name); err != nil {
		w.stats.errors.Add(1)
		s.errsSince++
		now := w.now()
		s.renameRetry = now.Add(w.cfg.retry)
		w.report(s, now, "audit: cannot rotate the log; it grows past its size limit", fmt.Errorf("rotate: %w", err))
		return true
	}
	s.renameRetry = time.Time{}
	w.stats.rotations.Add(1)
	s.rotated = append(s.rotated, rotatedFile{path: name, at: at})
	w.prune(s)
	if err := s.f.Close(); err != nil {
		// Everything was flushed; a close error still means the file
		// system may not have it all.
		w.stats.errors.Add(1)
		s.errsSince++
		w.report(s, w.now(), "audit: closing the rotated log failed", err)
	}
	s.f = nil
	if err := w.openFile(s); err != nil {
		w.fail(s, err, 0)
		return false
	}
	return true
}

// rotatedPath is the name for the current file of s rotated now.
func (w *writer) rotatedPath(s *sink) rotatedFile {
	// A strictly later time than the newest rotated file keeps the names
	// unique and in order even when the clock stands still or steps back.
	at := w.now().UTC().Truncate(time.Millisecond)
	if n := len(s.rotated); n > 0 && !at.After(s.rotated[n-1].at) {
		at = s.rotated[n-1].at.Add(time.Millisecond)
	}
	for {
		if _, err := os.Lstat(auditfmt.RotatedName(s.path, at)); errors.Is(err, fs.ErrNotExist) {
			break
		}
		at = at.Add(time.Millisecond) // someone else's file: never overwrite it
	}
	return rotatedFile{path: auditfmt.RotatedName(s.path, at), at: at}
}

// prune deletes the oldest rotated files of s beyond MaxFiles.
func (w *writer) prune(s *sink) {
	if w.cfg.maxFiles < 0 {
		return
	}
	for len(s.rotated) > w.cfg.maxFiles {
		old := s.rotated[0]
		if err := os.Remove(old.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			// Kept in the list: the next rotation tries again.
			w.stats.errors.Add(1)
			w.log.Warn("audit: cannot delete an old rotated log", "file", old.path, "err", err)
			return
		}
		s.rotated = s.rotated[1:]
	}
}
