// Package proc holds the few process operations mew needs beyond os/exec:
// process groups, so that stopping a program also stops what it started
// (npx starts node, a shell its commands); sessions, for `mew space up
// --detach`; and liveness checks by pid. Where there are no process groups
// (not Unix), a group is just its leader and SIGTERM is a kill.
package proc
