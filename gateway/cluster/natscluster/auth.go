package natscluster

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// ErrAuth is the error (wrapped) of a node whose credentials the NATS server
// refused, or that brought none to a server that wants some.
var ErrAuth = errors.New("natscluster: the NATS server refused this node's credentials (or their absence)")

// Bounds on the files Auth reads: a secret (seed, creds, password, private
// key) is a few hundred bytes; a CA bundle or a certificate chain is larger.
const (
	maxSecretFile = 64 << 10
	maxCertFile   = 1 << 20
)

// Auth says how a node proves itself to NATS and checks the server, with
// files: secrets never travel on a command line (other local users read
// argv) nor into a log. At most one of CredsFile, NkeyFile and User;
// CertFile and KeyFile together. CAFile or a client certificate turn TLS on
// (as does a tls:// URL). nats.go reads the creds, seed, CA and certificate
// files again at each reconnection, so they may be rotated; the password is
// read once.
//
// A secret file (creds, seed, password, private key) must be a regular file
// no other user may read or anyone but its owner write (0600, 0400, 0640 or
// 0440): a key others could read is no longer a secret.
type Auth struct {
	// CredsFile is a NATS .creds file: a user JWT and its nkey seed, for a
	// server in operator (JWT) mode.
	CredsFile string
	// NkeyFile holds an nkey user seed ("SU…"); the server lists its public
	// key ("U…") under authorization { users: [{nkey: …}] }.
	NkeyFile string
	// User and PasswordFile: a user name and a file whose first line is
	// its password.
	User, PasswordFile string
	// CAFile holds the PEM certificates the server's certificate must chain
	// to, instead of the system's.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its key, for a
	// server that verifies its clients (tls { verify: true }).
	CertFile, KeyFile string
}

// IsZero reports whether a asks for nothing: no credentials, no TLS files.
func (a Auth) IsZero() bool { return a == Auth{} }

// identities says which of the mutually exclusive ways of naming oneself a
// sets, by the Auth field names.
func (a Auth) identities() []string {
	var ids []string
	if a.CredsFile != "" {
		ids = append(ids, "CredsFile")
	}
	if a.NkeyFile != "" {
		ids = append(ids, "NkeyFile")
	}
	if a.User != "" || a.PasswordFile != "" {
		ids = append(ids, "User")
	}
	return ids
}

// Check reads every file a names and refuses, before anything connects, a
// combination that cannot work or a file that is missing, too open, too
// large or not what it should be. Its errors wrap cluster.ErrInvalid and
// name the files, never their contents.
func (a Auth) Check() error {
	_, err := a.options()
	return err
}

// options checks a and returns the nats.go options that apply it.
func (a Auth) options() ([]nats.Option, error) {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("natscluster: %s: %w", fmt.Sprintf(format, args...), cluster.ErrInvalid)
	}
	if ids := a.identities(); len(ids) > 1 {
		return nil, invalid("NATS credentials given %d ways (%s): give one", len(ids), strings.Join(ids, ", "))
	}
	if (a.User == "") != (a.PasswordFile == "") {
		return nil, invalid("a NATS user needs a password file, and a password file a user")
	}
	if (a.CertFile == "") != (a.KeyFile == "") {
		return nil, invalid("a NATS client certificate needs its key file, and a key file its certificate")
	}
	var opts []nats.Option
	switch {
	case a.CredsFile != "":
		data, err := readFile(a.CredsFile, true, maxSecretFile)
		if err != nil {
			return nil, invalid("creds file %s: %v", a.CredsFile, err)
		}
		if err := checkCreds(data); err != nil {
			return nil, invalid("creds file %s: %v", a.CredsFile, err)
		}
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	case a.NkeyFile != "":
		if _, err := NkeyPublicKey(a.NkeyFile); err != nil {
			return nil, err
		}
		o, err := nats.NkeyOptionFromSeed(a.NkeyFile)
		if err != nil {
			return nil, invalid("nkey file %s: %v", a.NkeyFile, err)
		}
		opts = append(opts, o)
	case a.User != "":
		data, err := readFile(a.PasswordFile, true, maxSecretFile)
		if err != nil {
			return nil, invalid("password file %s: %v", a.PasswordFile, err)
		}
		pw, _, _ := strings.Cut(string(data), "\n")
		pw = strings.TrimRight(pw, "\r")
		if strings.TrimSpace(pw) == "" {
			return nil, invalid("password file %s: no password on its first line", a.PasswordFile)
		}
		opts = append(opts, nats.UserInfo(a.User, pw))
	}
	if a.CAFile != "" {
		data, err := readFile(a.CAFile, false, maxCertFile)
		if err != nil {
			return nil, invalid("CA file %s: %v", a.CAFile, err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(data) {
			return nil, invalid("CA file %s: no PEM certificate in it", a.CAFile)
		}
		opts = append(opts, nats.RootCAs(a.CAFile))
	}
	if a.CertFile != "" {
		cert, err := readFile(a.CertFile, false, maxCertFile)
		if err != nil {
			return nil, invalid("certificate file %s: %v", a.CertFile, err)
		}
		key, err := readFile(a.KeyFile, true, maxSecretFile)
		if err != nil {
			return nil, invalid("key file %s: %v", a.KeyFile, err)
		}
		// tls's errors name what is wrong (no PEM data, a key that does not
		// match), never the key's bytes.
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			return nil, invalid("client certificate %s and key %s: %v", a.CertFile, a.KeyFile, err)
		}
		opts = append(opts, nats.ClientCert(a.CertFile, a.KeyFile))
	}
	return opts, nil
}

// checkCreds checks that data is a creds file: a decorated user JWT, then a
// decorated user seed.
func checkCreds(data []byte) error {
	jwt, err := nkeys.ParseDecoratedJWT(data)
	// Undecorated input comes back whole: that is no creds file.
	if err != nil || jwt == string(data) || strings.Count(jwt, ".") != 2 {
		return errors.New("no user JWT between -----BEGIN NATS USER JWT----- lines")
	}
	kp, err := nkeys.ParseDecoratedUserNKey(data)
	if err != nil {
		return fmt.Errorf("no nkey user seed (SU…) in it: %w", err)
	}
	kp.Wipe()
	return nil
}

// NkeyPublicKey checks the nkey seed file at path (a regular file of at most
// 64 KiB that only its owner may write and no other user read, holding a
// user seed "SU…") and returns the seed's public key ("U…"), which is what a
// NATS server lists. Its errors wrap cluster.ErrInvalid and never hold the
// seed.
func NkeyPublicKey(path string) (string, error) {
	data, err := readFile(path, true, maxSecretFile)
	if err != nil {
		return "", fmt.Errorf("natscluster: nkey file %s: %v: %w", path, err, cluster.ErrInvalid)
	}
	defer clear(data)
	kp, err := nkeys.ParseDecoratedUserNKey(data)
	if err != nil {
		return "", fmt.Errorf("natscluster: nkey file %s: not an nkey user seed (SU…): %w", path, cluster.ErrInvalid)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("natscluster: nkey file %s: %w: %w", path, err, cluster.ErrInvalid)
	}
	return pub, nil
}

// EnsureNkeyFile returns the public key of the nkey user seed at path,
// creating the file first, with a new random seed and mode 0600, when it
// does not exist. The directory must exist (keep it private: 0700). The
// file is created exclusively, so two callers at once agree on one seed.
func EnsureNkeyFile(path string) (string, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if err := createNkeyFile(path); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return NkeyPublicKey(path)
}

// createNkeyFile writes a new user seed to path, which must not exist.
func createNkeyFile(path string) error {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return fmt.Errorf("natscluster: a new nkey: %w", err)
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return fmt.Errorf("natscluster: a new nkey: %w", err)
	}
	defer clear(seed)
	if err := createSecretFile(path, append(seed, '\n')); err != nil {
		return fmt.Errorf("natscluster: nkey file: %w", err)
	}
	return nil
}

// createSecretFile makes path, which must not exist, hold data with mode
// 0600. The file appears whole or not at all (written aside, then linked
// into place), so that nodes started at once, each making the space's
// secret on first use, never read one another's half-written file: the
// first link wins and the others read it (their error wraps fs.ErrExist).
func createSecretFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp, path)
}

// routeSecretLen is the length of a route secret EnsureRouteSecret makes:
// 32 random bytes, hex-encoded.
const routeSecretLen = 64

// EnsureRouteSecret returns the route secret in the file at path (its first
// line), creating the file first, with 32 random bytes in hex and mode 0600,
// when it does not exist. It is the password the embedded NATS servers of a
// cluster ask of each other's routes (ServerOptions.RouteSecret): every
// server of the cluster reads the same file. The file must be a regular
// file no other user may read (0600 or 0400), its secret at least 32
// characters. Errors wrap cluster.ErrInvalid and never hold the secret.
func EnsureRouteSecret(path string) (string, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		var b [routeSecretLen / 2]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("natscluster: a route secret: %w", err)
		}
		if err := createSecretFile(path, []byte(hex.EncodeToString(b[:])+"\n")); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("natscluster: route secret file: %w", err)
		}
	}
	data, err := readFile(path, true, maxSecretFile)
	if err != nil {
		return "", fmt.Errorf("natscluster: route secret file %s: %v: %w", path, err, cluster.ErrInvalid)
	}
	defer clear(data)
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSpace(line)
	if len(line) < routeSecretLen/2 || strings.ContainsAny(line, " \t:@/") {
		return "", fmt.Errorf("natscluster: route secret file %s: its first line is no secret of 32 or more characters without spaces, ':', '@' or '/': %w", path, cluster.ErrInvalid)
	}
	return line, nil
}

// readFile reads a regular file of at most limit bytes. A secret must not be
// readable by other users nor writable by anyone but its owner.
func readFile(path string, secret bool, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already in the caller's message
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, errors.New("not a regular file")
	case fi.Size() > limit:
		return nil, fmt.Errorf("larger than %d bytes", limit)
	case secret && fi.Mode().Perm()&0o027 != 0:
		return nil, fmt.Errorf("mode %04o lets other users read or change it: chmod 600 it", fi.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty")
	}
	return data, nil
}

// URLHasCredentials reports whether a URL list (as Options.URL takes it)
// carries a user, password or token in one of its URLs.
func URLHasCredentials(list string) bool {
	for p := range strings.SplitSeq(list, ",") {
		u, err := url.Parse(strings.TrimSpace(p))
		if (err == nil && u.User != nil) || (err != nil && strings.Contains(p, "@")) {
			return true
		}
	}
	return false
}

// refused reports whether a connection error is the server refusing the
// client's credentials (or their absence).
func refused(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrAccountAuthExpired)
}
