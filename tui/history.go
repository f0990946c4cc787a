package tui

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LoadHistory reads the input history kept in path, one line each, oldest
// first; a missing file is an empty history. Only the latest maxHistory
// lines are kept.
func LoadHistory(path string) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > maxHistory {
		lines = lines[len(lines)-maxHistory:]
	}
	return lines, sc.Err()
}

// SaveHistory writes the latest maxHistory lines to path, readable by the
// user only (what was typed may be private), replacing it atomically.
func SaveHistory(path string, lines []string) error {
	if len(lines) > maxHistory {
		lines = lines[len(lines)-maxHistory:]
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".history-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	for _, l := range lines {
		_, _ = w.WriteString(strings.ReplaceAll(l, "\n", " ") + "\n")
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
