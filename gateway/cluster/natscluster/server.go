package natscluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// ServerOptions configure an embedded NATS server with JetStream: the
// `--nats embedded[:PORT]` of `mew gateway start`, and the tests.
type ServerOptions struct {
	// Name is the server's name, unique in a NATS cluster. "" lets the
	// server pick one.
	Name string
	// Host and Port are where clients connect. "" is 127.0.0.1; Port 0 is
	// any free port (read it back from ClientURL).
	Host string
	Port int
	// StoreDir holds JetStream's files. Required.
	StoreDir string
	// ClusterName, ClusterPort and Routes join the server to a NATS
	// cluster of servers (JetStream replicas need three). ClusterPort -1 is
	// any free port; 0 is no cluster. Routes are nats-route://host:port
	// URLs of the other servers; a user and password in them
	// (nats-route://user:password@host:port) is also what this server's
	// cluster port requires of the others.
	ClusterName string
	ClusterPort int
	Routes      []string
	// RouteSecret, when set, is the password (user "mew") this server's
	// cluster port asks of every route, and presents on its own Routes,
	// which must then carry no user of their own: the servers of a cluster
	// share it (EnsureRouteSecret), and no other server routes in.
	RouteSecret string
	// MaxMemory and MaxStore bound JetStream's memory and disk, in bytes;
	// 0 lets the server decide.
	MaxMemory, MaxStore int64
	// MaxPayload is the largest message the server accepts; 0 is 2 MiB,
	// enough for MinMaxPayload.
	MaxPayload int32
	// Logs turns the server's log on (to stderr).
	Logs bool
	// Nkeys are the public keys ("U…") of the nkey users allowed to
	// connect: with any, a client must sign the server's challenge with a
	// listed key's seed (Auth.NkeyFile). None lets anyone who reaches the
	// port in, and write grants every node enforces: only for a test's
	// server in its own process. `mew gateway start --nats embedded`
	// always sets one.
	Nkeys []string
}

// MinMaxPayload is the smallest max_payload a NATS server must allow for a
// node: a record of cluster.MaxRecordLen bytes and its headers.
// StartServer sets it; a NATS server run by an operator needs
// `max_payload: 2MB` (its default is 1 MB).
const MinMaxPayload = cluster.MaxRecordLen + 64<<10

// routeUser is the user a route presents with ServerOptions.RouteSecret.
const routeUser = "mew"

// embeddedMaxPayload is the max_payload of an embedded server.
const embeddedMaxPayload = 2 << 20

// StartServer starts an embedded NATS server with JetStream in this process
// and waits until it accepts connections. The caller owns it: Shutdown
// stops it, WaitForShutdown waits for its goroutines.
func StartServer(o ServerOptions) (*server.Server, error) {
	if o.StoreDir == "" {
		return nil, errors.New("natscluster: embedded server: no store dir")
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Port == 0 {
		o.Port = -1
	}
	if o.MaxPayload == 0 {
		o.MaxPayload = embeddedMaxPayload
	}
	var users []*server.NkeyUser
	for _, k := range o.Nkeys {
		if !nkeys.IsValidPublicUserKey(k) {
			return nil, fmt.Errorf("natscluster: embedded server: %q is not an nkey user's public key: %w", k, cluster.ErrInvalid)
		}
		users = append(users, &server.NkeyUser{Nkey: k})
	}
	// JetStream's files hold the spaces' state: the store's directory is
	// the owner's alone (JetStream makes its own subdirectories 0750).
	if err := os.MkdirAll(o.StoreDir, 0o700); err != nil {
		return nil, fmt.Errorf("natscluster: embedded server: store dir: %w", err)
	}
	opts := &server.Options{
		ServerName: o.Name, Host: o.Host, Port: o.Port,
		JetStream: true, StoreDir: o.StoreDir,
		JetStreamMaxMemory: o.MaxMemory, JetStreamMaxStore: o.MaxStore,
		NoLog: !o.Logs, NoSigs: true, MaxPayload: o.MaxPayload,
		Nkeys: users,
	}
	if o.ClusterPort != 0 {
		opts.Cluster = server.ClusterOpts{Name: o.ClusterName, Host: o.Host, Port: o.ClusterPort}
		if o.RouteSecret != "" {
			opts.Cluster.Username, opts.Cluster.Password = routeUser, o.RouteSecret
		}
		for _, r := range o.Routes {
			u, err := url.Parse(r)
			if err != nil {
				// url's error repeats the URL, password and all.
				return nil, fmt.Errorf("natscluster: route %s does not parse: %w", Redact(r), cluster.ErrInvalid)
			}
			if o.RouteSecret != "" {
				if u.User != nil {
					return nil, fmt.Errorf("natscluster: route %s carries credentials besides RouteSecret: %w", Redact(r), cluster.ErrInvalid)
				}
				u.User = url.UserPassword(routeUser, o.RouteSecret)
			}
			opts.Routes = append(opts.Routes, u)
			if u.User != nil {
				opts.Cluster.Username = u.User.Username()
				opts.Cluster.Password, _ = u.User.Password()
			}
		}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natscluster: embedded server: %w", err)
	}
	if o.Logs {
		s.ConfigureLogger()
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, errors.New("natscluster: embedded server not ready after 10s")
	}
	return s, nil
}

// StartServers starts n embedded NATS servers that form one NATS cluster
// with JetStream (buckets and streams may then have up to n replicas): a
// cluster on one machine, for tests and trials. Each server is named sI and
// stores under StoreDir/sI; o.ClusterName "" is "mew"; the routes are
// chosen here, so o.ClusterPort and o.Routes are ignored. With o.Nkeys,
// the cluster ports admit only these servers (a random route password). The caller owns
// the servers. JetStream elects its leaders after they return: a node's
// first requests may fail for a few seconds (retry natscluster.New).
func StartServers(n int, o ServerOptions) ([]*server.Server, error) {
	if n < 1 {
		return nil, fmt.Errorf("natscluster: %d servers", n)
	}
	if o.StoreDir == "" {
		return nil, errors.New("natscluster: embedded servers: no store dir")
	}
	if o.ClusterName == "" {
		o.ClusterName = "mew"
	}
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	// Servers that admit only some clients admit only each other as
	// routes: a route is a server, which sees and writes everything.
	userinfo := ""
	if len(o.Nkeys) > 0 {
		var pw [24]byte
		if _, err := rand.Read(pw[:]); err != nil {
			return nil, fmt.Errorf("natscluster: a route password: %w", err)
		}
		userinfo = "mew:" + hex.EncodeToString(pw[:]) + "@"
	}
	// Every route list names all servers, so the route ports are fixed
	// before any starts: free ones, taken back from the system.
	ports := make([]int, n)
	var routes []string
	for i := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("natscluster: a route port: %w", err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		routes = append(routes, "nats-route://"+userinfo+net.JoinHostPort(host, strconv.Itoa(ports[i])))
	}
	// Started together: each waits for the others' routes to be ready.
	type started struct {
		i   int
		s   *server.Server
		err error
	}
	ch := make(chan started, n)
	for i := range n {
		go func() {
			so := o
			so.Name = "s" + strconv.Itoa(i)
			so.StoreDir = filepath.Join(o.StoreDir, so.Name)
			so.ClusterPort, so.Routes = ports[i], routes
			s, err := StartServer(so)
			ch <- started{i, s, err}
		}()
	}
	servers := make([]*server.Server, n)
	var errs []error
	for range n {
		r := <-ch
		servers[r.i] = r.s
		errs = append(errs, r.err)
	}
	if err := errors.Join(errs...); err != nil {
		for _, s := range servers {
			if s != nil {
				s.Shutdown()
				s.WaitForShutdown()
			}
		}
		return nil, err
	}
	return servers, nil
}
