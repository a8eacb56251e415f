//go:build !linux

package miniotest

import (
	"net"
	"testing"
)

// reserveAddr returns a loopback address with a port that was free just
// now: elsewhere than on Linux the port is not held (the kernels' rules
// for sockets sharing a port differ), so another process may take it
// before MinIO binds it, or while it is down; Start then tries new ports,
// and Restart fails.
func reserveAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("miniotest: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}
