//go:build !linux

package gateway

import "errors"

// canPark: elsewhere than on Linux a reader never parks (park.go).
const canPark = false

// poller is never made here.
type poller struct{}

func newPoller() (*poller, error) { return nil, errors.New("parking needs Linux") }

func (*poller) watch(*joinedConn) error { return errors.New("parking needs Linux") }

func (*poller) forget(*joinedConn) {}

func (*poller) close() {}
