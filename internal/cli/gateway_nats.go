package cli

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/mew-protocol/mew/gateway/cluster/natscluster"
)

// natsAuthFlags are how a node proves itself to NATS and checks it: file
// paths only, since argv is visible to every local user.
type natsAuthFlags struct {
	creds, nkey, user, passwordFile, ca, cert, key string
}

// addNATSAuthFlags declares the flags of a.
func addNATSAuthFlags(fl *pflag.FlagSet, a *natsAuthFlags) {
	fl.StringVar(&a.creds, "nats-creds", "", "NATS .creds file (user JWT and nkey seed) for a server in operator mode; mode 0600")
	fl.StringVar(&a.nkey, "nats-nkey", "", "file holding an nkey user seed (SU…), mode 0600; with --nats embedded, the seed the embedded server admits (default <mew dir>/nats-auth/nodes.nk, made on first use)")
	fl.StringVar(&a.user, "nats-user", "", "NATS user name; its password is the first line of --nats-password-file")
	fl.StringVar(&a.passwordFile, "nats-password-file", "", "file whose first line is the --nats-user password (mode 0600; never a password on the command line)")
	fl.StringVar(&a.ca, "nats-ca", "", "PEM CA certificates the NATS server's certificate must chain to (turns TLS on)")
	fl.StringVar(&a.cert, "nats-cert", "", "PEM client certificate for NATS TLS, with --nats-key")
	fl.StringVar(&a.key, "nats-key", "", "PEM private key of --nats-cert (mode 0600)")
}

// auth is what the flags ask of the node's connection.
func (a natsAuthFlags) auth() natscluster.Auth {
	return natscluster.Auth{CredsFile: a.creds, NkeyFile: a.nkey, User: a.user, PasswordFile: a.passwordFile,
		CAFile: a.ca, CertFile: a.cert, KeyFile: a.key}
}

// errNATSAuthAlone is the refusal of NATS credential flags without --nats.
var errNATSAuthAlone = errors.New("--nats-creds, --nats-nkey, --nats-user, --nats-password-file, --nats-ca, --nats-cert and --nats-key need --nats")

// embeddedAuth checks the flags for --nats embedded, whose server knows only
// nkeys, and returns the seed file of the node (and so of the server): the
// --nats-nkey given, else the space's own under mewDir, made on first use.
func (a natsAuthFlags) embeddedAuth(mewDir string) (natscluster.Auth, string, error) {
	if (a != natsAuthFlags{nkey: a.nkey}) {
		return natscluster.Auth{}, "", errors.New("--nats embedded takes only --nats-nkey: its server admits an nkey, on loopback, without TLS")
	}
	seed := a.nkey
	if seed == "" {
		var err error
		if seed, err = spaceNATSKey(mewDir); err != nil {
			return natscluster.Auth{}, "", err
		}
	}
	pub, err := natscluster.NkeyPublicKey(seed)
	if err != nil {
		return natscluster.Auth{}, "", fmt.Errorf("--nats-nkey: %w", err)
	}
	return natscluster.Auth{NkeyFile: seed}, pub, nil
}

// spaceNATSKey returns the nkey seed file that the nodes of the space whose
// state is in mewDir share with its embedded NATS server,
// <mewDir>/nats-auth/nodes.nk, creating it (0600, in a 0700 directory that
// git ignores) the first time.
func spaceNATSKey(mewDir string) (string, error) {
	return spaceNATSFile(mewDir, "nodes.nk", natscluster.EnsureNkeyFile)
}

// spaceNATSFile returns <mewDir>/nats-auth/name, a NATS credential the
// nodes of the space share, after making the 0700 directory (ignored by
// git) if need be and having ensure create the file if it is not there.
func spaceNATSFile(mewDir, name string, ensure func(path string) (string, error)) (string, error) {
	dir := filepath.Join(mewDir, "nats-auth")
	if err := ensureTokenDir(dir); err != nil {
		return "", fmt.Errorf("the NATS credential directory: %w", err)
	}
	path := filepath.Join(dir, name)
	if _, err := ensure(path); err != nil {
		return "", err
	}
	return path, nil
}
