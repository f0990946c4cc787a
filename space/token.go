package space

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MaxTokenFileSize is the largest token file a TokenStore reads.
const MaxTokenFileSize = 4 << 10

// tokenBytes is how many random bytes a new token holds.
const tokenBytes = 32

// gitignore is written into a token directory that TokenStore creates, so
// that tokens are never committed.
const gitignore = "*\n!.gitignore\n"

// TokenStore finds and creates participants' tokens.
//
// A TokenStore holds no state of its own and is safe for concurrent use;
// two processes creating the same participant's token at once agree on one.
type TokenStore struct {
	Dir    string              // directory of token files, normally <MewDir>/tokens
	Getenv func(string) string // nil = os.Getenv
	Rand   io.Reader           // nil = crypto/rand.Reader
}

// EnvName returns the environment variable that may hold the token of the
// participant id: "MEW_TOKEN_" and the id upper-cased, with '-' turned
// into '_'.
func EnvName(id string) string {
	return "MEW_TOKEN_" + strings.ToUpper(strings.ReplaceAll(id, "-", "_"))
}

// NewToken returns a new token: 32 bytes read from r (crypto/rand.Reader
// when r is nil), base64url-encoded without padding (43 characters).
func NewToken(r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	var b [tokenBytes]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("generating a token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Tokens returns the tokens that identify p, the first of these that
// exists: p's literal tokens (a copy, all of them valid); the environment
// variable EnvName(p.ID), trimmed, when not empty; the file
// <Dir>/<id>.token, trimmed; a new token written to that file.
func (s TokenStore) Tokens(p *Participant) ([]string, error) {
	if p == nil {
		return nil, errors.New("tokens: no participant")
	}
	if len(p.Tokens) > 0 {
		return slices.Clone(p.Tokens), nil
	}
	if err := ValidParticipantID(p.ID); err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if t := strings.TrimSpace(getenv(EnvName(p.ID))); t != "" {
		return []string{t}, nil
	}
	path, err := s.path(p.ID)
	if err != nil {
		return nil, err
	}
	t, err := readToken(path)
	if errors.Is(err, fs.ErrNotExist) {
		t, err = s.create(path)
		if errors.Is(err, fs.ErrExist) {
			// Someone else created it since we looked: use theirs.
			t, err = readToken(path)
		}
	}
	if err != nil {
		return nil, err
	}
	return []string{t}, nil
}

// FromFile reports whether Tokens takes p's token from the token store's
// file: p lists no literal tokens and its environment variable is unset.
func (s TokenStore) FromFile(p *Participant) bool {
	if p == nil || len(p.Tokens) > 0 {
		return false
	}
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return strings.TrimSpace(getenv(EnvName(p.ID))) == ""
}

// FileToken reads the token file of the participant id, creating nothing:
// an error wrapping fs.ErrNotExist when there is none (it was revoked).
func (s TokenStore) FileToken(id string) (string, error) {
	if err := ValidParticipantID(id); err != nil {
		return "", fmt.Errorf("tokens: %w", err)
	}
	path, err := s.path(id)
	if err != nil {
		return "", err
	}
	return readToken(path)
}

// Generate creates a new token file for the participant id and returns the
// token. It refuses, with an error wrapping fs.ErrExist, when the file
// already exists, and refuses ids that ValidParticipantID rejects.
func (s TokenStore) Generate(id string) (string, error) {
	if err := ValidParticipantID(id); err != nil {
		return "", fmt.Errorf("generating a token: %w", err)
	}
	path, err := s.path(id)
	if err != nil {
		return "", err
	}
	return s.create(path)
}

// path returns the token file of a valid id.
func (s TokenStore) path(id string) (string, error) {
	if s.Dir == "" {
		return "", errors.New("token store has no directory")
	}
	return filepath.Join(s.Dir, id+".token"), nil
}

// readToken reads a token file, refusing symbolic links, other non-regular
// files and files larger than MaxTokenFileSize. A missing file gives an
// error wrapping fs.ErrNotExist.
func readToken(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, pathErr(err))
	}
	if err := checkTokenFile(fi); err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, pathErr(err))
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, pathErr(err))
	}
	if !os.SameFile(fi, opened) {
		return "", fmt.Errorf("token file %s: replaced while being opened", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxTokenFileSize+1))
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, pathErr(err))
	}
	if len(data) > MaxTokenFileSize {
		return "", fmt.Errorf("token file %s: larger than %d bytes", path, MaxTokenFileSize)
	}
	t := strings.TrimSpace(string(data))
	if t == "" {
		return "", fmt.Errorf("token file %s: empty", path)
	}
	return t, nil
}

func checkTokenFile(fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return errors.New("is a symbolic link")
	case !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	case fi.Size() > MaxTokenFileSize:
		return fmt.Errorf("larger than %d bytes", MaxTokenFileSize)
	}
	return nil
}

// create writes a new token to path, which must not exist (the error wraps
// fs.ErrExist when it does). The file appears complete or not at all: the
// token is written to a temporary file that is then linked into place.
func (s TokenStore) create(path string) (string, error) {
	if err := s.ensureDir(); err != nil {
		return "", err
	}
	t, err := NewToken(s.Rand)
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(s.Dir, ".token-*.tmp") // mode 0600
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, pathErr(err))
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	if err := writeClose(tmp, t); err != nil {
		return "", fmt.Errorf("token file %s: %w", path, pathErr(err))
	}
	err = os.Link(tmpName, path)
	switch {
	case err == nil:
		return t, nil
	case errors.Is(err, fs.ErrExist):
		return "", fmt.Errorf("token file %s: %w", path, fs.ErrExist)
	}
	// No hard links on this file system: create the file exclusively.
	if err := writeExclusive(path, t); err != nil {
		return "", err
	}
	return t, nil
}

// writeExclusive creates path with mode 0600, failing if it exists, and
// writes t to it, removing it again if the write fails.
func writeExclusive(path, t string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("token file %s: %w", path, fs.ErrExist)
		}
		return fmt.Errorf("token file %s: %w", path, pathErr(err))
	}
	if err := writeClose(f, t); err != nil {
		os.Remove(path)
		return fmt.Errorf("token file %s: %w", path, pathErr(err))
	}
	return nil
}

// writeClose writes t to f, syncs it to disk and closes it, returning the
// first error.
func writeClose(f *os.File, t string) error {
	_, err := f.WriteString(t)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ensureDir creates the token directory with mode 0700 and a .gitignore
// when it does not exist.
func (s TokenStore) ensureDir() error {
	if fi, err := os.Stat(s.Dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("token directory %s: not a directory", s.Dir)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(s.Dir), 0o700); err != nil {
		return fmt.Errorf("token directory %s: %w", s.Dir, err)
	}
	if err := os.Mkdir(s.Dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // created by someone else meanwhile
		}
		return fmt.Errorf("token directory %s: %w", s.Dir, pathErr(err))
	}
	// The umask may have taken bits away; make sure the owner has all.
	if err := os.Chmod(s.Dir, 0o700); err != nil {
		return fmt.Errorf("token directory %s: %w", s.Dir, pathErr(err))
	}
	ignore := filepath.Join(s.Dir, ".gitignore")
	f, err := os.OpenFile(ignore, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("token directory %s: %w", s.Dir, pathErr(err))
	}
	_, err = f.WriteString(gitignore)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", ignore, pathErr(err))
	}
	return nil
}
