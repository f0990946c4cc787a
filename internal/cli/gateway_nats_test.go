package cli

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/mew-protocol/mew/internal/testpki"
)

// embeddedNATSLine finds the URL and the seed file the embedded NATS server
// of a node logged when it started.
var embeddedNATSLine = regexp.MustCompile(`msg="embedded NATS server started[^"]*" url=(nats://\S+) nkey_file=(\S+)`)

// newUserSeed returns a fresh nkey user seed and its public key.
func newUserSeed(t *testing.T) ([]byte, string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	return seed, pub
}

// checkNATSLocked checks the embedded NATS server at url as an attacker on
// the machine would try it: it listens on loopback; a client without
// credentials, and one with a seed of its own, are refused (so neither can write a grant into the state
// bucket); the seed file is 0600 in a 0700 directory; a client holding it
// gets in.
func checkNATSLocked(t *testing.T, url, seedPath string) {
	t.Helper()
	if !strings.HasPrefix(url, "nats://127.0.0.1:") {
		t.Errorf("the embedded NATS server listens at %s, not on loopback only", url)
	}
	if nc, err := nats.Connect(url); err == nil {
		nc.Close()
		t.Fatalf("a NATS client without credentials connected to %s", url)
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("a client without credentials: %v, want an authorization violation", err)
	}
	other, _ := newUserSeed(t)
	opt, err := nats.NkeyOptionFromSeed(testpki.WriteFile(t, t.TempDir(), "other.nk", other, 0o600))
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(url, opt); err == nil {
		nc.Close()
		t.Fatalf("a NATS client with a seed of its own connected to %s", url)
	}
	for path, want := range map[string]os.FileMode{seedPath: 0o600, filepath.Dir(seedPath): 0o700} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v, want %v", path, err, fi.Mode().Perm(), want)
		}
	}
	opt, err = nats.NkeyOptionFromSeed(seedPath)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, opt)
	if err != nil {
		t.Fatalf("a client with the space's seed: %v", err)
	}
	nc.Close()
}

// TestGatewayStartNATSBadInput: NATS credential flags that cannot work, and
// files that are missing, too open or malformed, are refused before the
// node connects, and no secret reaches the error or the log.
func TestGatewayStartNATSBadInput(t *testing.T) {
	good := writeSpace(t, "space: {id: x}\nparticipants:\n  a: {capabilities: [{kind: chat}]}\n")
	dir := t.TempDir()
	userSeed, _ := newUserSeed(t)
	seed := testpki.WriteFile(t, dir, "user.nk", userSeed, 0o600)
	open := testpki.WriteFile(t, dir, "open.nk", userSeed, 0o644)
	garbage := testpki.WriteFile(t, dir, "garbage.nk", []byte("SUAAAAnot-a-seed\n"), 0o600)
	pw := testpki.WriteFile(t, dir, "pw", []byte("sekret-password\n"), 0o600)
	pki := testpki.New(t, dir)
	notPEM := testpki.WriteFile(t, dir, "ca.txt", []byte("hello"), 0o644)
	missing := filepath.Join(dir, "missing")
	const nowhere = "nats://127.0.0.1:1" // nothing listens: a check that passed would fail to connect
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--nats-nkey", seed}, "need --nats"},
		{[]string{"--nats-ca", pki.CACert}, "need --nats"},
		{[]string{"--nats-user", "u", "--nats-password-file", pw}, "need --nats"},
		{[]string{"--nats", "embedded:0", "--nats-creds", seed}, "takes only --nats-nkey"},
		{[]string{"--nats", "embedded:0", "--nats-ca", pki.CACert}, "takes only --nats-nkey"},
		{[]string{"--nats", "embedded:0", "--nats-user", "u", "--nats-password-file", pw}, "takes only --nats-nkey"},
		{[]string{"--nats", "embedded:0", "--nats-nkey", missing}, "no such file"},
		{[]string{"--nats", "embedded:0", "--nats-nkey", open}, "chmod 600"},
		{[]string{"--nats", "embedded:0", "--nats-nkey", garbage}, "not an nkey user seed"},
		{[]string{"--nats", "embedded:0", "--nats-nkey", dir}, "not a regular file"},
		{[]string{"--nats", nowhere, "--nats-cert", pki.ClientCert}, "needs its key file"},
		{[]string{"--nats", nowhere, "--nats-key", pki.ClientKey}, "needs its key file"},
		{[]string{"--nats", nowhere, "--nats-cert", pki.ClientCert, "--nats-key", seed}, "client certificate"},
		{[]string{"--nats", nowhere, "--nats-user", "u"}, "needs a password file"},
		{[]string{"--nats", nowhere, "--nats-password-file", pw}, "needs a password file"},
		{[]string{"--nats", nowhere, "--nats-user", "u", "--nats-password-file", open}, "mode 0644"},
		{[]string{"--nats", nowhere, "--nats-creds", seed, "--nats-nkey", seed}, "2 ways"},
		{[]string{"--nats", nowhere, "--nats-creds", seed}, "no user JWT"},
		{[]string{"--nats", nowhere, "--nats-creds", missing}, "no such file"},
		{[]string{"--nats", nowhere, "--nats-nkey", open}, "mode 0644"},
		{[]string{"--nats", nowhere, "--nats-nkey", garbage}, "not an nkey user seed"},
		{[]string{"--nats", nowhere, "--nats-ca", notPEM}, "no PEM certificate"},
		{[]string{"--nats", nowhere, "--nats-ca", missing}, "no such file"},
		{[]string{"--nats", "nats://mew:sekret@127.0.0.1:1", "--nats-nkey", seed}, "carries credentials"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, stderr, err := run(t, Options{}, append([]string{"gateway", "start", "-p", "0", "-s", good}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
			out := err.Error() + stderr
			for _, secret := range []string{string(userSeed), "sekret", string(pki.ClientKeyPEM[40:80])} {
				if strings.Contains(out, secret) {
					t.Fatalf("a secret reached the output: %v\n%s", err, stderr)
				}
			}
		})
	}
}

// TestGatewayStartExternalNATS: a node joins a NATS server run by an
// operator that requires TLS with client certificates and an nkey or a
// user's password, with the matching flags; without the credentials or
// without the TLS files it fails, saying why.
func TestGatewayStartExternalNATS(t *testing.T) {
	path := writeSpace(t, "space: {id: ext}\nparticipants:\n  a: {tokens: [a-token], capabilities: [{kind: chat}]}\n")
	dir := t.TempDir()
	pki := testpki.New(t, dir)
	userSeed, pub := newUserSeed(t)
	seed := testpki.WriteFile(t, dir, "user.nk", userSeed, 0o600)
	pw := testpki.WriteFile(t, dir, "pw", []byte("right-password\n"), 0o400)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, MaxPayload: 2 << 20,
		Nkeys: []*server.NkeyUser{{Nkey: pub}}, Users: []*server.User{{Username: "mew", Password: "right-password"}},
		TLS: true, TLSVerify: true, TLSTimeout: 2, TLSConfig: pki.ServerTLS(t)})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS not ready")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	url := ns.ClientURL()
	tlsFlags := []string{"--nats-ca", pki.CACert, "--nats-cert", pki.ClientCert, "--nats-key", pki.ClientKey}

	for i, cred := range [][]string{{"--nats-nkey", seed}, {"--nats-user", "mew", "--nats-password-file", pw}} {
		args := append([]string{"-s", path, "--nats", url, "--node-id", "n" + strconv.Itoa(i), "--log-dir", t.TempDir()}, append(cred, tlsFlags...)...)
		g := startGatewayCmd(t, args...)
		if !strings.Contains(g.stderr.String(), `msg="joined the cluster"`) {
			t.Errorf("%v: no join in the log:\n%s", cred, g.stderr.String())
		}
		if err := g.stop(t); err != nil {
			t.Errorf("%v: stop: %v", cred, err)
		}
	}
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no credentials": {tlsFlags, "--nats-nkey, --nats-creds or --nats-user"},
		"wrong password": {append([]string{"--nats-user", "mew", "--nats-password-file", testpki.WriteFile(t, dir, "bad", []byte("wrong-password"), 0o600)}, tlsFlags...), "refused this node's credentials"},
		"no TLS files":   {[]string{"--nats-nkey", seed}, "certificate"},
	} {
		t.Run(name, func(t *testing.T) {
			_, stderr, err := run(t, Options{}, append([]string{"gateway", "start", "-p", "0", "-s", path, "--nats", url}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
			if out := err.Error() + stderr; strings.Contains(out, "password\n") || strings.Contains(out, "wrong-password") || strings.Contains(out, string(userSeed)) {
				t.Fatalf("a secret reached the output: %s", out)
			}
		})
	}
}

// TestSpaceUpNodesNATSAuth: the embedded NATS server of `mew space up --nodes
// 2` admits only its nodes: they hold the space's seed, handed to each by
// its path (never the secret in argv), and a local process without it is
// refused.
func TestSpaceUpNodesNATSAuth(t *testing.T) {
	dir := spaceDir(t, "space: {id: locked}\nparticipants:\n  a: {tokens: [a-token], capabilities: [{kind: chat}]}\n")
	out, err := mew(t, dir, "space", "up", "--detach", "-p", "0", "--nodes", "2")
	st, rerr := upState(t, dir)
	if err != nil || rerr != nil || len(st.Nodes) != 2 {
		t.Fatalf("space up --nodes 2: %v %v\n%s", err, rerr, out)
	}
	logData, _ := os.ReadFile(filepath.Join(dir, "logs", "gateway.log"))
	m := embeddedNATSLine.FindStringSubmatch(string(logData))
	if m == nil {
		t.Fatalf("no embedded NATS line in node 1's log:\n%s", logData)
	}
	seedPath := filepath.Join(dir, "nats-auth", "nodes.nk")
	if m[2] != seedPath {
		t.Errorf("node 1 uses the seed %s, want %s", m[2], seedPath)
	}
	checkNATSLocked(t, m[1], seedPath)
	seed, err := os.ReadFile(seedPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		argv, err := os.ReadFile("/proc/" + strconv.Itoa(n.PID) + "/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(argv), "--nats-nkey\x00"+seedPath) || strings.Contains(string(argv), strings.TrimSpace(string(seed))) {
			t.Errorf("node %s's argv: %q", n.ID, argv)
		}
	}
	if out, err := mew(t, dir, "space", "down"); err != nil {
		t.Fatalf("down: %v\n%s", err, out)
	}
}
