package natscluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/internal/testpki"
)

// newSeed returns a new nkey pair's seed and public key; prefix picks user,
// account or operator.
func newSeed(t *testing.T, prefix nkeys.PrefixByte) ([]byte, string, nkeys.KeyPair) {
	t.Helper()
	kp, err := nkeys.CreatePair(prefix)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	return seed, pub, kp
}

// startCustomServer starts a NATS server with JetStream on a random port of
// 127.0.0.1, configured by tune (authentication, TLS), stopped when the test
// ends: a NATS server run by an operator, as a node meets it.
func startCustomServer(t *testing.T, tune func(*server.Options)) *server.Server {
	t.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true, MaxPayload: embeddedMaxPayload}
	tune(o)
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// connectNode makes a node on url with auth; the node is closed when the
// test ends.
func connectNode(t *testing.T, url string, auth Auth) (*Node, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := New(ctx, Options{NodeID: "n1", URL: url, Auth: auth, RequestTimeout: 3 * time.Second})
	if err == nil {
		t.Cleanup(func() { _ = n.Close() })
	}
	return n, err
}

// mustWork checks that the node reaches JetStream: a state write read back.
func mustWork(t *testing.T, n *Node, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := n.State().Put(ctx, "s", "k", []byte("v"), cluster.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if e, err := n.State().Get(ctx, "s", "k"); err != nil || string(e.Value) != "v" {
		t.Fatalf("get: %v %q", err, e.Value)
	}
}

// TestEmbeddedServerRequiresNkey: an embedded server given a public nkey
// refuses a client without credentials and one signing with another seed
// (neither can reach the state bucket), and serves a node with the seed.
func TestEmbeddedServerRequiresNkey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nodes.nk")
	pub, err := EnsureNkeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, ServerOptions{Nkeys: []string{pub}})
	if u := s.ClientURL(); !strings.HasPrefix(u, "nats://127.0.0.1:") {
		t.Errorf("the embedded server listens at %s, not on loopback only", u)
	}

	// A plain client, as any local process could make.
	if nc, err := nats.Connect(s.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("a client without credentials connected")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("no credentials: %v, want an authorization violation", err)
	}
	// A client with a seed of its own.
	wrong := testpki.WriteFile(t, dir, "wrong.nk", must(newSeed(t, nkeys.PrefixByteUser)), 0o600)
	opt, err := nats.NkeyOptionFromSeed(wrong)
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(s.ClientURL(), opt); err == nil {
		nc.Close()
		t.Fatal("a client with another seed connected")
	}
	// A client naming the right public key without its seed cannot sign.
	if nc, err := nats.Connect(s.ClientURL(), nats.Nkey(pub, func(nonce []byte) ([]byte, error) {
		_, _, kp := newSeed(t, nkeys.PrefixByteUser)
		return kp.Sign(nonce)
	})); err == nil {
		nc.Close()
		t.Fatal("a client with the public key and a forged signature connected")
	}

	// Nodes: without credentials refused with ErrAuth, with the wrong seed
	// too, with the seed served.
	if _, err := connectNode(t, s.ClientURL(), Auth{}); !errors.Is(err, ErrAuth) {
		t.Errorf("node without credentials: %v, want ErrAuth", err)
	}
	if _, err := connectNode(t, s.ClientURL(), Auth{NkeyFile: wrong}); !errors.Is(err, ErrAuth) {
		t.Errorf("node with another seed: %v, want ErrAuth", err)
	}
	n, err := connectNode(t, s.ClientURL(), Auth{NkeyFile: path})
	mustWork(t, n, err)

	if _, err := StartServer(ServerOptions{StoreDir: t.TempDir(), Nkeys: []string{"SUAFAKE"}}); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("a server given a malformed public key: %v", err)
	}
	fi, err := os.Stat(s.StoreDir())
	if err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("the store directory: %v, mode %v", err, fi.Mode())
	}
}

func must(seed []byte, _ string, _ nkeys.KeyPair) []byte { return seed }

// TestEnsureNkeyFile: the seed file is made 0600 once and reused; a file
// others may read, or that holds no user seed, is refused; callers at once
// agree on one seed.
func TestEnsureNkeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nodes.nk")
	pub := ensureAtOnce(t, path, EnsureNkeyFile, nkeys.IsValidPublicUserKey)
	if again, err := EnsureNkeyFile(path); err != nil || again != pub {
		t.Errorf("reuse: %q %v, want %q", again, err, pub)
	}
	seed, _ := os.ReadFile(path)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureNkeyFile(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable seed: %v", err)
	} else if strings.Contains(err.Error(), strings.TrimSpace(string(seed))) {
		t.Errorf("the error holds the seed: %v", err)
	}
	garbage := testpki.WriteFile(t, dir, "garbage.nk", []byte("SUnot-a-seed\n"), 0o600)
	if _, err := EnsureNkeyFile(garbage); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("garbage: %v", err)
	}
	if _, err := EnsureNkeyFile(filepath.Join(dir, "no", "such", "dir.nk")); err == nil {
		t.Error("a seed file in a missing directory was made")
	}
}

// TestAuthCheckRefuses: combinations that cannot work and files that are
// missing, too open, too large or malformed are refused before connecting,
// naming the file and never its contents.
func TestAuthCheckRefuses(t *testing.T) {
	dir := t.TempDir()
	userSeed, _, _ := newSeed(t, nkeys.PrefixByteUser)
	acctSeed, _, _ := newSeed(t, nkeys.PrefixByteAccount)
	seed := testpki.WriteFile(t, dir, "user.nk", userSeed, 0o600)
	open := testpki.WriteFile(t, dir, "open.nk", userSeed, 0o644)
	groupWritable := testpki.WriteFile(t, dir, "gw.nk", userSeed, 0o620)
	account := testpki.WriteFile(t, dir, "account.nk", acctSeed, 0o600)
	pubOnly := testpki.WriteFile(t, dir, "pub.nk", []byte("UABCDEF\n"), 0o600)
	big := testpki.WriteFile(t, dir, "big.nk", append(userSeed, make([]byte, maxSecretFile)...), 0o600)
	empty := testpki.WriteFile(t, dir, "empty", []byte(" \n"), 0o600)
	pw := testpki.WriteFile(t, dir, "pw", []byte("s3cr3t-pass\n"), 0o600)
	noPw := testpki.WriteFile(t, dir, "nopw", []byte("\nsecond-line\n"), 0o600)
	undecorated := testpki.WriteFile(t, dir, "plain.creds", userSeed, 0o600)
	fakeJWT := testpki.WriteFile(t, dir, "fake.creds", []byte("-----BEGIN NATS USER JWT-----\nnot-a-jwt\n------END NATS USER JWT------\n"), 0o600)
	pki := testpki.New(t, dir)
	otherKey := testpki.WriteFile(t, dir, "other-key.pem", testpki.New(t, t.TempDir()).ClientKeyPEM, 0o600)
	notPEM := testpki.WriteFile(t, dir, "ca.txt", []byte("hello"), 0o644)
	missing := filepath.Join(dir, "missing")

	for _, c := range []struct {
		name string
		a    Auth
		want string
	}{
		{"creds and nkey", Auth{CredsFile: seed, NkeyFile: seed}, "2 ways"},
		{"nkey and user", Auth{NkeyFile: seed, User: "u", PasswordFile: pw}, "2 ways"},
		{"user without password", Auth{User: "u"}, "needs a password file"},
		{"password without user", Auth{PasswordFile: pw}, "needs a password file"},
		{"cert without key", Auth{CertFile: pki.ClientCert}, "needs its key file"},
		{"key without cert", Auth{KeyFile: pki.ClientKey}, "needs its key file"},
		{"missing nkey", Auth{NkeyFile: missing}, "no such file"},
		{"nkey a directory", Auth{NkeyFile: dir}, "not a regular file"},
		{"world-readable nkey", Auth{NkeyFile: open}, "mode 0644"},
		{"group-writable nkey", Auth{NkeyFile: groupWritable}, "mode 0620"},
		{"account seed", Auth{NkeyFile: account}, "not an nkey user seed"},
		{"public key for a seed", Auth{NkeyFile: pubOnly}, "not an nkey user seed"},
		{"oversized nkey", Auth{NkeyFile: big}, "larger than"},
		{"empty nkey", Auth{NkeyFile: empty}, "empty"},
		{"missing creds", Auth{CredsFile: missing}, "no such file"},
		{"seed for creds", Auth{CredsFile: undecorated}, "no user JWT"},
		{"creds without a JWT", Auth{CredsFile: fakeJWT}, "no user JWT"},
		{"world-readable password", Auth{User: "u", PasswordFile: testpki.WriteFile(t, dir, "pw-open", []byte("x\n"), 0o604)}, "mode 0604"},
		{"empty password", Auth{User: "u", PasswordFile: noPw}, "no password on its first line"},
		{"missing CA", Auth{CAFile: missing}, "no such file"},
		{"CA not PEM", Auth{CAFile: notPEM}, "no PEM certificate"},
		{"missing cert", Auth{CertFile: missing, KeyFile: pki.ClientKey}, "no such file"},
		{"world-readable key", Auth{CertFile: pki.ClientCert, KeyFile: testpki.WriteFile(t, dir, "key-open.pem", pki.ClientKeyPEM, 0o644)}, "mode 0644"},
		{"key of another cert", Auth{CertFile: pki.ClientCert, KeyFile: otherKey}, "does not match"},
		{"cert for key", Auth{CertFile: pki.ClientKey, KeyFile: pki.ClientKey}, "client certificate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.a.Check()
			if !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check: %v, want ErrInvalid mentioning %q", err, c.want)
			}
			// New refuses the same before dialing (nothing listens there).
			_, nerr := connectNode(t, "nats://127.0.0.1:1", c.a)
			if !errors.Is(nerr, cluster.ErrInvalid) {
				t.Fatalf("New: %v", nerr)
			}
			for _, secret := range [][]byte{userSeed, acctSeed, []byte("s3cr3t-pass"), pki.ClientKeyPEM[40:80]} {
				if strings.Contains(err.Error()+nerr.Error(), string(secret)) {
					t.Fatalf("a secret reached the error: %v", err)
				}
			}
		})
	}
	if err := (Auth{NkeyFile: seed, CAFile: pki.CACert, CertFile: pki.ClientCert, KeyFile: pki.ClientKey}).Check(); err != nil {
		t.Errorf("a good Auth: %v", err)
	}
	ctx := context.Background()
	if _, err := New(ctx, Options{NodeID: "n", URL: "nats://u:p@127.0.0.1:1", Auth: Auth{NkeyFile: seed}}); !errors.Is(err, cluster.ErrInvalid) || strings.Contains(err.Error(), ":p@") {
		t.Errorf("credentials in the URL and in Auth: %v", err)
	}
	if _, err := New(ctx, Options{NodeID: "n", Conn: &nats.Conn{}, Auth: Auth{NkeyFile: seed}}); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("Auth with a Conn: %v", err)
	}
}

// TestExternalServerNkeyAndPassword: a NATS server run by an operator with
// an nkey user and a password user serves nodes with the matching Auth, and
// refuses them with ErrAuth without it or with a wrong password.
func TestExternalServerNkeyAndPassword(t *testing.T) {
	dir := t.TempDir()
	userSeed, pub, _ := newSeed(t, nkeys.PrefixByteUser)
	seed := testpki.WriteFile(t, dir, "user.nk", userSeed, 0o600)
	s := startCustomServer(t, func(o *server.Options) {
		o.Nkeys = []*server.NkeyUser{{Nkey: pub}}
		o.Users = []*server.User{{Username: "mew", Password: "right-password"}}
	})
	n, err := connectNode(t, s.ClientURL(), Auth{NkeyFile: seed})
	mustWork(t, n, err)
	n2, err := connectNode(t, s.ClientURL(), Auth{User: "mew", PasswordFile: testpki.WriteFile(t, dir, "pw", []byte("right-password\n"), 0o400)})
	mustWork(t, n2, err)
	for name, a := range map[string]Auth{
		"nothing":        {},
		"wrong password": {User: "mew", PasswordFile: testpki.WriteFile(t, dir, "bad", []byte("wrong-password"), 0o600)},
	} {
		if _, err := connectNode(t, s.ClientURL(), a); !errors.Is(err, ErrAuth) {
			t.Errorf("%s: %v, want ErrAuth", name, err)
		} else if strings.Contains(err.Error(), "password") && strings.Contains(err.Error(), "wrong-password") {
			t.Errorf("%s: the password reached the error: %v", name, err)
		}
	}
}

// TestExternalServerCreds: a server in operator (JWT) mode, with JetStream
// for the account, serves a node given the user's .creds file and refuses
// one without it, or with a user of an account it does not trust.
func TestExternalServerCreds(t *testing.T) {
	dir := t.TempDir()
	_, opub, okp := newSeed(t, nkeys.PrefixByteOperator)
	_, apub, akp := newSeed(t, nkeys.PrefixByteAccount)
	_, syspub, _ := newSeed(t, nkeys.PrefixByteAccount)
	oc := jwt.NewOperatorClaims(opub)
	oc.SystemAccount = syspub
	ac := jwt.NewAccountClaims(apub)
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	ajwt, err := ac.Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	sysjwt, err := jwt.NewAccountClaims(syspub).Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	creds := func(name string, signer nkeys.KeyPair) string {
		useed, upub, _ := newSeed(t, nkeys.PrefixByteUser)
		uj, err := jwt.NewUserClaims(upub).Encode(signer)
		if err != nil {
			t.Fatal(err)
		}
		data, err := jwt.FormatUserConfig(uj, useed)
		if err != nil {
			t.Fatal(err)
		}
		return testpki.WriteFile(t, dir, name, data, 0o600)
	}
	resolver := &server.MemAccResolver{}
	for k, v := range map[string]string{apub: ajwt, syspub: sysjwt} {
		if err := resolver.Store(k, v); err != nil {
			t.Fatal(err)
		}
	}
	s := startCustomServer(t, func(o *server.Options) {
		o.TrustedOperators = []*jwt.OperatorClaims{oc}
		o.AccountResolver = resolver
		o.SystemAccount = syspub
	})
	n, err := connectNode(t, s.ClientURL(), Auth{CredsFile: creds("good.creds", akp)})
	mustWork(t, n, err)
	_, _, strangerAcct := newSeed(t, nkeys.PrefixByteAccount)
	for name, a := range map[string]Auth{"nothing": {}, "untrusted account": {CredsFile: creds("stranger.creds", strangerAcct)}} {
		if _, err := connectNode(t, s.ClientURL(), a); !errors.Is(err, ErrAuth) {
			t.Errorf("%s: %v, want ErrAuth", name, err)
		}
	}
}

// TestExternalServerTLS: a server that requires TLS and verifies client
// certificates serves a node given the CA and a client certificate; a node
// without the CA, without a certificate or with one from another CA fails.
func TestExternalServerTLS(t *testing.T) {
	dir := t.TempDir()
	pki := testpki.New(t, dir)
	stranger := testpki.New(t, t.TempDir())
	s := startCustomServer(t, func(o *server.Options) {
		o.TLS, o.TLSVerify, o.TLSTimeout = true, true, 2
		o.TLSConfig = pki.ServerTLS(t)
	})
	url := s.ClientURL()
	n, err := connectNode(t, url, Auth{CAFile: pki.CACert, CertFile: pki.ClientCert, KeyFile: pki.ClientKey})
	mustWork(t, n, err)
	for name, c := range map[string]struct {
		a    Auth
		want string
	}{
		"no TLS files": {Auth{}, "unknown authority"},
		// The server ends the handshake: the client reads the alert, or a
		// closed connection, as timing decides.
		"no client cert":      {Auth{CAFile: pki.CACert}, "tls"},
		"system CAs":          {Auth{CertFile: pki.ClientCert, KeyFile: pki.ClientKey}, "unknown authority"},
		"another CA's client": {Auth{CAFile: pki.CACert, CertFile: stranger.ClientCert, KeyFile: stranger.ClientKey}, "tls"},
	} {
		if _, err := connectNode(t, url, c.a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a failure mentioning %q", name, err, c.want)
		}
	}
}

// TestStartServersRoutesLocked: servers that admit only an nkey admit only
// each other on their cluster ports: a rogue server routing to one of them
// (it would see and write every stream) gets no route, and nodes still work
// across the real servers.
func TestStartServersRoutesLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nodes.nk")
	pub, err := EnsureNkeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	servers, err := StartServers(2, ServerOptions{StoreDir: t.TempDir(), Nkeys: []string{pub}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for servers[0].NumRoutes() == 0 || servers[1].NumRoutes() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the two servers never routed to each other")
		}
		time.Sleep(50 * time.Millisecond)
	}
	rogue := startServer(t, ServerOptions{Name: "rogue", ClusterName: "mew", ClusterPort: -1,
		Routes: []string{"nats-route://" + servers[0].ClusterAddr().String()}})
	time.Sleep(2 * time.Second) // a route without credentials is made (or not) within a second
	// Only the rogue's own count is asserted: the two servers add pooled
	// routes to each other over time, so their count is not stable.
	if n := rogue.NumRoutes(); n != 0 {
		t.Fatalf("a rogue server without the route password routed: %d routes", n)
	}
	// A two-server JetStream cluster elects its meta leader only once both
	// are up; under load (-race, two cores) that can outlast one connect
	// attempt, so the node is given a few.
	var n *Node
	for try := 0; ; try++ {
		if n, err = connectNode(t, servers[1].ClientURL(), Auth{NkeyFile: path}); err == nil || try == 3 {
			break
		}
	}
	mustWork(t, n, err)
	if _, err := StartServer(ServerOptions{StoreDir: t.TempDir(), ClusterPort: -1, Routes: []string{"nats-route://u:sekret@[::1"}}); !errors.Is(err, cluster.ErrInvalid) || strings.Contains(err.Error(), "sekret") {
		t.Errorf("a malformed route: %v", err)
	}
}
