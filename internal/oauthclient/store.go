package oauthclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// record is what is kept of one resource: the client the authorisation
// server knows us as, where its endpoints are, and the tokens it gave.
type record struct {
	Issuer        string    `json:"issuer,omitempty"`
	AuthURL       string    `json:"authorization_endpoint,omitempty"`
	TokenURL      string    `json:"token_endpoint"`
	ClientID      string    `json:"client_id"`
	ClientSecret  string    `json:"client_secret,omitempty"`
	AuthMethod    string    `json:"token_endpoint_auth_method,omitempty"`
	RedirectURI   string    `json:"redirect_uri,omitempty"`
	Resource      string    `json:"resource,omitempty"`
	Scopes        []string  `json:"scopes,omitempty"`
	AccessToken   string    `json:"access_token,omitempty"`
	RefreshToken  string    `json:"refresh_token,omitempty"`
	Expiry        time.Time `json:"expiry,omitzero"`
	Registered    bool      `json:"registered,omitempty"` // the client id came from dynamic registration
	ClientCredGot bool      `json:"client_credentials,omitempty"`
}

// valid reports whether the access token may still be sent.
func (r *record) valid(now time.Time) bool {
	return r != nil && r.AccessToken != "" && (r.Expiry.IsZero() || now.Before(r.Expiry))
}

// storeFile is the token file's layout: records by key (the resource URL).
type storeFile struct {
	Version int                `json:"version"`
	Entries map[string]*record `json:"entries"`
}

// store is a token file. Several handlers of one process may share a
// file (by path, through the same store); mu orders their writes.
type store struct {
	path string
	mu   sync.Mutex
}

// load returns the record of key, nil when there is none. A file that
// others may read is made private before it is used.
func (s *store) load(key string) (*record, error) {
	if s == nil || s.path == "" {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	return f.Entries[key], nil
}

func (s *store) read() (*storeFile, error) {
	f := &storeFile{Version: 1, Entries: map[string]*record{}}
	info, err := os.Stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth token file: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(s.path, 0o600); err != nil {
			return nil, fmt.Errorf("oauth token file %s is readable by others and cannot be made private: %w", s.path, err)
		}
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return nil, fmt.Errorf("oauth token file: %w", err)
	}
	if err := json.Unmarshal(data, f); err != nil {
		// The content is not quoted: it holds secrets.
		return nil, fmt.Errorf("oauth token file %s does not parse (remove it to sign in again)", s.path)
	}
	if f.Entries == nil {
		f.Entries = map[string]*record{}
	}
	return f, nil
}

// save replaces the record of key (nil removes it), writing the file
// anew under a temporary name so that a crash leaves the old one whole.
func (s *store) save(key string, r *record) error {
	if s == nil || s.path == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read()
	if err != nil {
		return err
	}
	if r == nil {
		delete(f.Entries, key)
	} else {
		c := *r
		f.Entries[key] = &c
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("oauth token file: %w", err)
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("oauth token file: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".oauth-*.tmp") // CreateTemp makes it 0600
	if err != nil {
		return fmt.Errorf("oauth token file: %w", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("oauth token file: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("oauth token file: %w", err)
	}
	return nil
}
