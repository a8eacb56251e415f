package miniotest

import (
	"errors"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAddressHeldWhileDown: between Stop and Restart, the server's port
// stays bound by a live socket of this process (so the kernel hands it to
// nobody asking for a free port): a socket that may share the port only
// with the dead server's leftovers is refused it (with the port chosen,
// released and handed over, as before, it was taken). Nothing answers
// there meanwhile, and Restart brings the same server (its secret) back on
// the same address.
func TestAddressHeldWhileDown(t *testing.T) {
	s := Start(t)
	addr := s.Endpoint
	s.Stop()
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("%s answers with the server stopped", addr)
	}
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// SO_REUSEPORT: the killed server's connections left in TIME_WAIT
	// (which would refuse a plain bind whether or not the port is held)
	// share their port with it; a live socket holding the port does not.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		t.Fatal(err)
	}
	err = unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: ta.Port})
	if !errors.Is(err, unix.EADDRINUSE) {
		t.Fatalf("binding %s with the server stopped: %v, want EADDRINUSE (the port held)", addr, err)
	}
	s.Restart() // fails the test unless this server answers at addr
	if s.Endpoint != addr {
		t.Fatalf("restarted at %s, not %s", s.Endpoint, addr)
	}
}
