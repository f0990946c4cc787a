// Package testpki makes, for one test, a certificate authority with a
// server certificate for 127.0.0.1 and a client certificate, written as PEM
// files (keys 0600) into a directory of the test's: what a test of TLS to
// NATS needs, with no private key checked into the repository.
package testpki
