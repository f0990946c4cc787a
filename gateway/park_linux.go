//go:build linux

package gateway

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// canPark: on Linux an idle reader parks (park.go).
const canPark = true

// errPollerClosed: the server is closing and takes no more parked
// connections.
var errPollerClosed = errors.New("poller closed")

// poller watches parked connections' sockets with one epoll set and one
// goroutine. Each socket is watched one-shot: the first readiness (data, a
// close, an error) resumes its connection and disarms the watch until the
// connection parks again. The Go runtime's own poller watches the same
// sockets; a second epoll set beside it is allowed and changes nothing for
// it.
//
// Ownership: the Server starts it on the first park and closes it when its
// connections have ended (Server.Close); its goroutine runs loop.
type poller struct {
	epfd int
	wake int // an eventfd in the set: written by close to stop loop
	done chan struct{}

	mu     sync.Mutex
	closed bool
	conns  map[uint64]*joinedConn // by pollID
	next   uint64
}

// stopID is the wake eventfd's key; connections' keys start at 1.
const stopID = 0

func newPoller() (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: stopID}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		_ = unix.Close(wake)
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	p := &poller{epfd: epfd, wake: wake, done: make(chan struct{}), conns: make(map[uint64]*joinedConn)}
	go p.loop()
	return p, nil
}

// watch arms the watch of jc's socket. The epoll call runs inside the
// socket's Control, which holds the descriptor open: a socket closed
// meanwhile fails here rather than its number, reused, being watched.
func (p *poller) watch(jc *joinedConn) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errPollerClosed
	}
	if jc.pollID == 0 {
		p.next++
		jc.pollID = p.next
		jc.poller.Store(p)
		p.conns[jc.pollID] = jc
	}
	ev := unix.EpollEvent{
		Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT,
		Fd:     int32(uint32(jc.pollID)), Pad: int32(uint32(jc.pollID >> 32)),
	}
	var cerr error
	err := jc.rc.Control(func(fd uintptr) {
		op := unix.EPOLL_CTL_MOD
		if !jc.watched {
			op = unix.EPOLL_CTL_ADD
		}
		cerr = unix.EpollCtl(p.epfd, op, int(fd), &ev)
	})
	if err = errors.Join(err, cerr); err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	jc.watched = true
	return nil
}

// forget drops an ended connection. Its socket, closed, has left the epoll
// set by itself.
func (p *poller) forget(jc *joinedConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, jc.pollID)
}

// loop resumes the connections whose sockets are ready until close wakes it.
// On its way out it resumes every connection it still knows of, so that
// none stays parked with nobody watching (their readers then read without
// parking).
func (p *poller) loop() {
	defer close(p.done)
	defer p.resumeAll()
	var evs [128]unix.EpollEvent
	for {
		n, err := unix.EpollWait(p.epfd, evs[:], -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			p.mu.Lock()
			p.closed = true
			p.mu.Unlock()
			return
		}
		for i := range evs[:n] {
			id := uint64(uint32(evs[i].Fd)) | uint64(uint32(evs[i].Pad))<<32
			if id == stopID {
				return
			}
			p.mu.Lock()
			jc := p.conns[id]
			p.mu.Unlock()
			if jc != nil {
				jc.resume()
			}
		}
	}
}

func (p *poller) resumeAll() {
	p.mu.Lock()
	p.closed = true
	all := make([]*joinedConn, 0, len(p.conns))
	for _, jc := range p.conns {
		all = append(all, jc)
	}
	p.mu.Unlock()
	for _, jc := range all {
		jc.resume()
	}
}

// close stops the poller's goroutine and releases its descriptors.
func (p *poller) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	one := [8]byte{1}
	_, _ = unix.Write(p.wake, one[:]) // native endianness; any non-zero count wakes
	<-p.done
	_ = unix.Close(p.wake)
	_ = unix.Close(p.epfd)
}
