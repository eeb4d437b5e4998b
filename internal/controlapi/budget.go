package controlapi

import (
	"net"
)

// budget is one listener's share of connections. Connections that have not
// said a good auth.hello are "pre-auth" and capped apart, oldest first out,
// so strangers who connect and idle can neither fill the listener nor keep a
// newcomer from its hello. All fields are guarded by Server.mu.
type budget struct {
	maxConns, maxPre, maxPerHost int
	conns                        int
	pre                          []*conn // pre-auth, oldest first
	preByHost                    map[string]int
}

func newBudget(ln net.Listener, o Options) *budget {
	perHost := o.MaxPreAuthPerHost
	if ln.Addr().Network() == "unix" {
		// Every local peer has the same (empty) address.
		perHost = o.MaxPreAuth
	}
	return &budget{maxConns: o.MaxConns, maxPre: o.MaxPreAuth, maxPerHost: perHost, preByHost: map[string]int{}}
}

// admit makes room for a new pre-auth connection from host, evicting the
// oldest pre-auth connection (that host's own first) when a cap is reached.
// It refuses only when the listener is full of authenticated connections.
func (b *budget) admit(host string) bool {
	if b.preByHost[host] >= b.maxPerHost {
		b.evictOldest(func(c *conn) bool { return c.host == host })
	}
	if len(b.pre) >= b.maxPre || b.conns >= b.maxConns {
		b.evictOldest(func(*conn) bool { return true })
	}
	return b.conns < b.maxConns
}

func (b *budget) evictOldest(match func(*conn) bool) {
	for i, c := range b.pre {
		if match(c) {
			b.drop(i)
			// Its goroutines end on their own; its slot is free now.
			c.counted = false
			b.conns--
			c.evict()
			return
		}
	}
}

func (b *budget) add(c *conn) {
	b.conns++
	c.counted, c.preAuth = true, true
	b.pre = append(b.pre, c)
	b.preByHost[c.host]++
}

func (b *budget) authenticated(c *conn) {
	if !c.preAuth {
		return
	}
	for i, p := range b.pre {
		if p == c {
			b.drop(i)
			return
		}
	}
}

// drop removes b.pre[i] from the pre-auth set; it stays counted in conns
// until remove.
func (b *budget) drop(i int) {
	c := b.pre[i]
	b.pre = append(b.pre[:i], b.pre[i+1:]...)
	c.preAuth = false
	if b.preByHost[c.host]--; b.preByHost[c.host] <= 0 {
		delete(b.preByHost, c.host)
	}
}

func (b *budget) remove(c *conn) {
	if !c.counted {
		return
	}
	b.authenticated(c)
	c.counted = false
	b.conns--
}

// preAuthCount reports the pre-auth connections (for tests).
func (b *budget) preAuthCount() int { return len(b.pre) }

func hostOf(nc net.Conn) string {
	a := nc.RemoteAddr()
	if a == nil || a.Network() == "unix" {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
