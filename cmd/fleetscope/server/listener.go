package server

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// limitListener bounds open connections in total and per address. At the
// per-address bound a new connection is closed at once, so that one client
// cannot take every file descriptor. At the total bound the connection
// that has been idle longest (no request in flight: never sent one, or
// between requests) is closed to make room, so idle connections, however
// many addresses open them, never lock out a new client, health checks
// included; only when every connection is busy is the new one refused.
// The server reports its connections' states through ConnState.
type limitListener struct {
	net.Listener
	total, perIP int

	mu    sync.Mutex
	byIP  map[string]int
	conns map[*limitConn]struct{}
}

func newLimitListener(ln net.Listener, total, perIP int) *limitListener {
	return &limitListener{Listener: ln, total: total, perIP: perIP, byIP: map[string]int{}, conns: map[*limitConn]struct{}{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		lc := &limitConn{Conn: c, l: l, ip: ip, idleSince: time.Now()}
		l.mu.Lock()
		ok := l.perIP <= 0 || l.byIP[ip] < l.perIP
		var shed *limitConn
		if ok && l.total > 0 && len(l.conns) >= l.total {
			shed = l.idlest()
			ok = shed != nil
		}
		if ok {
			l.conns[lc] = struct{}{}
			l.byIP[ip]++
			if shed != nil {
				l.forget(shed) // its place is the new one's from now on
			}
		}
		l.mu.Unlock()
		if shed != nil {
			shed.Conn.Close()
		}
		if !ok {
			c.Close()
			continue
		}
		return lc, nil
	}
}

// idlest returns the open connection idle longest, or nil if every one is
// busy. The caller holds l.mu.
func (l *limitListener) idlest() *limitConn {
	var out *limitConn
	for c := range l.conns {
		if !c.busy && (out == nil || c.idleSince.Before(out.idleSince)) {
			out = c
		}
	}
	return out
}

// forget drops a connection from the counts. The caller holds l.mu.
func (l *limitListener) forget(c *limitConn) {
	if _, ok := l.conns[c]; !ok {
		return
	}
	delete(l.conns, c)
	if l.byIP[c.ip]--; l.byIP[c.ip] <= 0 {
		delete(l.byIP, c.ip)
	}
}

// ConnState is the http.Server's hook: a connection with a request in
// flight is busy; one without, idle since then.
func (l *limitListener) ConnState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateActive:
		lc.busy = true
	case http.StateIdle:
		lc.busy, lc.idleSince = false, time.Now()
	case http.StateHijacked, http.StateClosed:
		l.forget(lc)
	}
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
	l         *limitListener
	ip        string
	busy      bool      // a request in flight (l.mu)
	idleSince time.Time // (l.mu)
	once      sync.Once
}

func (c *limitConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.forget(c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
