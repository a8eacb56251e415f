//go:build linux

package miniotest

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// reserveAddr returns a loopback address whose port this process holds
// until the test ends: a socket bound to it (SO_REUSEADDR) that never
// listens. Connections to the port are refused unless MinIO listens there;
// MinIO, whose listeners set SO_REUSEADDR (and SO_REUSEPORT), binds it
// alongside, as often as it is started; and while the socket is bound, the
// kernel never hands the port to anyone asking for a free one (bind to
// port 0, or an outgoing connection's local port). What it does not stop is
// another process binding that port number explicitly, with SO_REUSEADDR,
// while MinIO is down: a number it would have to have chosen some other way.
func reserveAddr(t testing.TB) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("miniotest: socket: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		t.Fatalf("miniotest: SO_REUSEADDR: %v", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("miniotest: bind: %v", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatalf("miniotest: getsockname: %v", err)
	}
	return (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*unix.SockaddrInet4).Port}).String()
}
