package server

import (
	"net"
	"sync"
)

// limitListener refuses connections beyond a total and a per-address
// bound, closing them at once instead of queueing them, so that one client
// cannot take every file descriptor and the server keeps room for health
// checks and queries. Refused connections are counted.
type limitListener struct {
	net.Listener
	total, perIP int

	mu      sync.Mutex
	open    int
	byIP    map[string]int
	refused int64
}

func newLimitListener(ln net.Listener, total, perIP int) *limitListener {
	return &limitListener{Listener: ln, total: total, perIP: perIP, byIP: map[string]int{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		l.mu.Lock()
		ok := (l.total <= 0 || l.open < l.total) && (l.perIP <= 0 || l.byIP[ip] < l.perIP)
		if ok {
			l.open++
			l.byIP[ip]++
		} else {
			l.refused++
		}
		l.mu.Unlock()
		if !ok {
			c.Close()
			continue
		}
		return &limitConn{Conn: c, l: l, ip: ip}, nil
	}
}

// Refused returns how many connections were refused.
func (l *limitListener) Refused() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

func remoteIP(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

type limitConn struct {
	net.Conn
	l    *limitListener
	ip   string
	once sync.Once
}

func (c *limitConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		if c.l.byIP[c.ip]--; c.l.byIP[c.ip] <= 0 {
			delete(c.l.byIP, c.ip)
		}
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
