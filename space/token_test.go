package space

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

// env returns a Getenv that knows only vars.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// fixedRand is a reader whose tokens are predictable.
func fixedRand(b byte) *bytes.Reader {
	return bytes.NewReader(bytes.Repeat([]byte{b}, 1024))
}

func perm(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestEnvName(t *testing.T) {
	for id, want := range map[string]string{
		"helper":        "MEW_TOKEN_HELPER",
		"mcp-fs-bridge": "MEW_TOKEN_MCP_FS_BRIDGE",
		"Agent_1":       "MEW_TOKEN_AGENT_1",
	} {
		if got := EnvName(id); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestNewToken(t *testing.T) {
	tok, err := NewToken(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != 43 || strings.Trim(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		t.Errorf("NewToken = %q, want 43 base64url characters", tok)
	}
	if other, _ := NewToken(nil); other == tok {
		t.Error("two random tokens are equal")
	}
	if tok, _ := NewToken(fixedRand(0xff)); tok != strings.Repeat("_", 42)+"8" {
		t.Errorf("NewToken(0xff...) = %q", tok)
	}
	if _, err := NewToken(iotest.ErrReader(errors.New("no entropy"))); err == nil {
		t.Error("NewToken with a failing reader: no error")
	}
	if _, err := NewToken(bytes.NewReader(make([]byte, 31))); err == nil {
		t.Error("NewToken with 31 bytes: no error")
	}
}

func TestTokensResolutionOrder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tokens")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.token"), []byte("  file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"MEW_TOKEN_P": " env-token\n"}
	s := TokenStore{Dir: dir, Getenv: env(vars), Rand: fixedRand(0)}

	// 1. Literal tokens win, all of them, as a copy.
	p := &Participant{ID: "p", Tokens: []string{"lit-1", "lit-2"}}
	got, err := s.Tokens(p)
	if err != nil || !slices.Equal(got, []string{"lit-1", "lit-2"}) {
		t.Fatalf("literal: %q, %v", got, err)
	}
	got[0] = "changed"
	if p.Tokens[0] != "lit-1" {
		t.Error("Tokens returned the participant's own slice")
	}

	// 2. Then the environment, trimmed.
	p.Tokens = nil
	if got, err := s.Tokens(p); err != nil || !slices.Equal(got, []string{"env-token"}) {
		t.Fatalf("env: %q, %v", got, err)
	}

	// 3. Then the file, trimmed. A blank variable does not count.
	vars["MEW_TOKEN_P"] = " \t\n"
	if got, err := s.Tokens(p); err != nil || !slices.Equal(got, []string{"file-token"}) {
		t.Fatalf("file: %q, %v", got, err)
	}

	// 4. Then a new token, written to the file.
	q := &Participant{ID: "q"}
	want := strings.Repeat("A", 43)
	if got, err := s.Tokens(q); err != nil || !slices.Equal(got, []string{want}) {
		t.Fatalf("generated: %q, %v", got, err)
	}
	path := filepath.Join(dir, "q.token")
	if data, err := os.ReadFile(path); err != nil || string(data) != want {
		t.Errorf("q.token = %q, %v; want %q", data, err, want)
	}
	if m := perm(t, path); m != 0o600 {
		t.Errorf("q.token mode = %v, want 0600", m)
	}
	// The directory existed: no .gitignore is added to it.
	if _, err := os.Stat(filepath.Join(dir, ".gitignore")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf(".gitignore in an existing directory: %v", err)
	}
	// Once written, the same token comes back.
	s.Rand = fixedRand(1)
	if got, err := s.Tokens(q); err != nil || !slices.Equal(got, []string{want}) {
		t.Errorf("second call: %q, %v", got, err)
	}
}

func TestTokensCreatesDirectory(t *testing.T) {
	mew := filepath.Join(t.TempDir(), ".mew")
	dir := filepath.Join(mew, "tokens")
	s := TokenStore{Dir: dir, Getenv: env(nil)}
	got, err := s.Tokens(&Participant{ID: "helper"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0]) != 43 {
		t.Errorf("Tokens = %q", got)
	}
	if m := perm(t, dir); m != 0o700 {
		t.Errorf("directory mode = %v, want 0700", m)
	}
	if m := perm(t, filepath.Join(dir, "helper.token")); m != 0o600 {
		t.Errorf("token mode = %v, want 0600", m)
	}
	if data, err := os.ReadFile(filepath.Join(dir, ".gitignore")); err != nil || string(data) != "*\n!.gitignore\n" {
		t.Errorf(".gitignore = %q, %v", data, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{".gitignore", "helper.token"}) {
		t.Errorf("directory holds %q; want only .gitignore and helper.token (no temporary files)", names)
	}
}

func TestTokensConcurrent(t *testing.T) {
	s := TokenStore{Dir: filepath.Join(t.TempDir(), "tokens"), Getenv: env(nil)}
	p := &Participant{ID: "racer"}
	const n = 16
	results := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var got []string
			got, errs[i] = s.Tokens(p)
			if len(got) == 1 {
				results[i] = got[0]
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if results[i] != results[0] || results[i] == "" {
			t.Fatalf("calls disagree: %q", results)
		}
	}
}

func TestTokenFileRefusals(t *testing.T) {
	const secret = "SECRET-token-value-123"
	root := t.TempDir()
	dir := filepath.Join(root, "tokens")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(root, "elsewhere")
	if err := os.WriteFile(elsewhere, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, "link.token")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "folder.token"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty.token"), []byte(" \n\t"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.token"), []byte(secret+strings.Repeat("x", 5000)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := TokenStore{Dir: dir, Getenv: env(nil)}
	tests := []struct{ id, want string }{
		{"link", "is a symbolic link"},
		{"folder", "not a regular file"},
		{"empty", "empty"},
		{"big", "larger than 4096 bytes"},
	}
	for _, tt := range tests {
		got, err := s.Tokens(&Participant{ID: tt.id})
		if err == nil {
			t.Errorf("%s: got %q, want an error", tt.id, got)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "token file "+filepath.Join(dir, tt.id+".token")) || !strings.Contains(msg, tt.want) {
			t.Errorf("%s: error %q, want the file named and %q", tt.id, msg, tt.want)
		}
		if strings.Contains(msg, secret) {
			t.Errorf("%s: error %q shows the token", tt.id, msg)
		}
	}
	// A refused file is never replaced by a new token.
	if data, _ := os.ReadFile(filepath.Join(dir, "empty.token")); string(data) != " \n\t" {
		t.Errorf("empty.token was rewritten: %q", data)
	}
	if data, _ := os.ReadFile(elsewhere); string(data) != secret {
		t.Errorf("symlink target was rewritten: %q", data)
	}
}

func TestGenerate(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "tokens")
	s := TokenStore{Dir: dir, Rand: fixedRand(0xfb)}
	tok, err := s.Generate("guest")
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "guest.token")); err != nil || string(data) != tok {
		t.Errorf("guest.token = %q, %v; want the token", data, err)
	}
	if m := perm(t, filepath.Join(dir, "guest.token")); m != 0o600 {
		t.Errorf("mode %v, want 0600", m)
	}
	if m := perm(t, dir); m != 0o700 {
		t.Errorf("directory mode %v, want 0700", m)
	}

	_, err = s.Generate("guest")
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Generate: %v, want fs.ErrExist", err)
	}
	if err != nil && strings.Contains(err.Error(), tok) {
		t.Errorf("error %q shows the token", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "guest.token")); string(data) != tok {
		t.Error("second Generate replaced the token")
	}

	// A symlink in the way counts as existing; nothing is written through it.
	target := filepath.Join(root, "target")
	if err := os.Symlink(target, filepath.Join(dir, "sym.token")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Generate("sym"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Generate over a symlink: %v, want fs.ErrExist", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Error("Generate wrote through a symlink")
	}

	for _, id := range []string{"../x", "a/b", "", "..", `a\b`, "x\x00"} {
		if _, err := s.Generate(id); !errors.Is(err, ErrInvalidParticipantID) {
			t.Errorf("Generate(%q): %v, want ErrInvalidParticipantID", id, err)
		}
		if _, err := s.Tokens(&Participant{ID: id}); !errors.Is(err, ErrInvalidParticipantID) {
			t.Errorf("Tokens(%q): %v, want ErrInvalidParticipantID", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "x.token")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("Generate(../x) wrote outside the directory")
	}
}

func TestTokenStoreErrors(t *testing.T) {
	if _, err := (TokenStore{}).Tokens(&Participant{ID: "p"}); err == nil {
		t.Error("Tokens without a directory: no error")
	}
	if _, err := (TokenStore{Dir: t.TempDir()}).Tokens(nil); err == nil {
		t.Error("Tokens(nil): no error")
	}
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (TokenStore{Dir: notDir, Getenv: env(nil)}).Tokens(&Participant{ID: "p"}); err == nil {
		t.Error("Tokens with a file for a directory: no error")
	}
	s := TokenStore{Dir: t.TempDir(), Getenv: env(nil), Rand: iotest.ErrReader(errors.New("no entropy"))}
	if _, err := s.Tokens(&Participant{ID: "p"}); err == nil {
		t.Error("Tokens with failing randomness: no error")
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "p.token")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a token file was left after a failure")
	}
}
