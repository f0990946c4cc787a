// Package auditfmttest loads the audit chain test vectors of
// internal/auditfmt/testdata (written by its gen.py, independently of the
// Go code), for the tests of the writer and the verifier alike.
package auditfmttest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// Dir is the directory of the vectors, found from this file's place in
// the module so that any package's test can read them.
func Dir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("auditfmttest: cannot locate the vectors")
	}
	return filepath.Join(filepath.Dir(file), "..", "testdata"), nil
}

// Line is one line of a good chain as its writer made it.
type Line struct {
	Body     string `json:"body"`      // the line without its chain members and closing brace
	WithPrev bool   `json:"with_prev"` // a writer started here: the line carries chain_prev
}

// File is one file of a good chain.
type File struct {
	Name  string `json:"name"`
	Lines []Line `json:"lines"`
}

// Chain is one case: a directory of log files, intact or broken.
type Chain struct {
	Case   string `json:"case"`
	Intact bool   `json:"intact"`
	// Of an intact chain: the last hash, the hash its oldest file starts
	// from when that is not the start of the log, and how it was written.
	Head        string `json:"head"`
	StartsAfter string `json:"starts_after"`
	Files       []File `json:"files"`
	// Of a broken chain: the file and 1-based line where it breaks.
	File string `json:"file"`
	Line int    `json:"line"`
}

// Dir is the directory holding the case's log files.
func (c *Chain) Dir(root string) string { return filepath.Join(root, "chains", c.Case) }

// FormCase is a line whose chain members are well formed (OK) or not.
type FormCase struct {
	Line    string `json:"line"`
	OK      bool   `json:"ok"`
	N       uint64 `json:"n"`
	HasPrev bool   `json:"has_prev"`
}

// Chains loads the chain cases.
func Chains() (root string, cases []Chain, err error) {
	root, err = Dir()
	if err == nil {
		err = load(filepath.Join(root, "chains.json"), &cases)
	}
	return root, cases, err
}

// Forms loads the line-form cases.
func Forms() ([]FormCase, error) {
	root, err := Dir()
	if err != nil {
		return nil, err
	}
	var cases []FormCase
	return cases, load(filepath.Join(root, "lines.json"), &cases)
}

func load(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("auditfmttest: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("auditfmttest: %s: %w", path, err)
	}
	return nil
}
