package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// ErrBlockedAddress is wrapped by every refusal of the address guard.
var ErrBlockedAddress = errors.New("web: address refused")

// BlockedError says which host and address were refused and why.
type BlockedError struct {
	Host  string
	Addr  netip.Addr // invalid when the host name itself is refused
	Class string
}

func (e *BlockedError) Error() string {
	target := e.Host
	if e.Addr.IsValid() && e.Host != e.Addr.String() {
		target = fmt.Sprintf("%s (%s)", e.Host, e.Addr)
	} else if e.Addr.IsValid() {
		target = e.Addr.String()
	}
	return fmt.Sprintf("%s is a %s address: refused by default; allow it with tools.web.fetch.allow_hosts or allow_cidrs", target, e.Class)
}

func (e *BlockedError) Unwrap() error { return ErrBlockedAddress }

// blockedRange is a class of address no public web page lives at.
type blockedRange struct {
	prefix netip.Prefix
	class  string
}

// Order matters: the metadata addresses come before the ranges that hold
// them, so the refusal names them for what they are.
var blockedRanges = func() []blockedRange {
	rows := []struct{ cidr, class string }{
		{"169.254.169.254/32", "cloud metadata"},
		{"fd00:ec2::254/128", "cloud metadata"},
		{"100.100.100.200/32", "cloud metadata"}, // Alibaba
		{"0.0.0.0/32", "unspecified"},
		{"::/128", "unspecified"},
		{"0.0.0.0/8", "this-network"},
		{"127.0.0.0/8", "loopback"},
		{"::1/128", "loopback"},
		{"10.0.0.0/8", "private"},
		{"172.16.0.0/12", "private"},
		{"192.168.0.0/16", "private"},
		{"fc00::/7", "private (ULA)"},
		{"169.254.0.0/16", "link-local"},
		{"fe80::/10", "link-local"},
		{"100.64.0.0/10", "CGNAT"},
		{"224.0.0.0/4", "multicast"},
		{"ff00::/8", "multicast"},
		{"255.255.255.255/32", "broadcast"},
		{"240.0.0.0/4", "reserved"},
		{"192.0.0.0/24", "reserved"},
		{"198.18.0.0/15", "benchmarking"},
		{"192.0.2.0/24", "documentation"},
		{"198.51.100.0/24", "documentation"},
		{"203.0.113.0/24", "documentation"},
		{"2001:db8::/32", "documentation"},
		{"::/96", "IPv4-compatible"},
		{"100::/64", "discard"},
	}
	out := make([]blockedRange, len(rows))
	for i, r := range rows {
		out[i] = blockedRange{netip.MustParsePrefix(r.cidr), r.class}
	}
	return out
}

// blockedNames are refused before any lookup: names that only mean
// something inside a cloud VM or on this machine.
var blockedNames = map[string]string{
	"metadata.google.internal": "cloud metadata",
	"metadata":                 "cloud metadata",
	"localhost":                "loopback",
}

// Guard decides which hosts and addresses web_fetch may reach.
type Guard struct {
	hosts  []string
	cidrs  []netip.Prefix
	ranges []blockedRange
}

// NewGuard builds the guard of a fetch config's allow-lists.
func NewGuard(allowHosts, allowCIDRs []string) (*Guard, error) {
	g := &Guard{ranges: blockedRanges()}
	for _, h := range allowHosts {
		g.hosts = append(g.hosts, strings.ToLower(strings.TrimSuffix(h, ".")))
	}
	for _, c := range allowCIDRs {
		p, err := parseCIDR(c)
		if err != nil {
			return nil, fmt.Errorf("web: allow_cidrs %q: %w", c, err)
		}
		g.cidrs = append(g.cidrs, p)
	}
	return g, nil
}

// HostAllowed reports whether host is on the allow-list, which lets it
// reach any address it resolves to.
func (g *Guard) HostAllowed(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, h := range g.hosts {
		if h == host || strings.HasPrefix(h, "*.") && strings.HasSuffix(host, h[1:]) {
			return true
		}
	}
	return false
}

// CheckHost refuses host names that are never public (before any lookup)
// and IP literals in a refused class. Names are checked again, as
// addresses, at dial time.
func (g *Guard) CheckHost(host string) error {
	if g.HostAllowed(host) {
		return nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if class, ok := blockedNames[name]; ok || strings.HasSuffix(name, ".localhost") {
		if !ok {
			class = "loopback"
		}
		return &BlockedError{Host: host, Class: class}
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return g.CheckAddr(host, a)
	}
	return nil
}

// CheckAddr refuses a in a blocked class unless allow_cidrs holds it.
// IPv4-mapped IPv6 (::ffff:10.0.0.1) is judged as the IPv4 it carries, and
// so are NAT64 and 6to4 addresses, which route to the IPv4 they embed.
func (g *Guard) CheckAddr(host string, a netip.Addr) error {
	a = a.WithZone("")
	for _, cand := range candidates(a) {
		for _, p := range g.cidrs {
			if p.Contains(cand) {
				return nil
			}
		}
	}
	for _, cand := range candidates(a) {
		for _, r := range g.ranges {
			if r.prefix.Contains(cand) {
				return &BlockedError{Host: host, Addr: a, Class: r.class}
			}
		}
	}
	return nil
}

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4  = netip.MustParsePrefix("2002::/16")
	nat64v2 = netip.MustParsePrefix("64:ff9b:1::/48")
)

// candidates are the addresses a stands for: itself and the IPv4 it
// embeds.
func candidates(a netip.Addr) []netip.Addr {
	if a.Is4In6() {
		return []netip.Addr{a.Unmap()}
	}
	if !a.Is6() {
		return []netip.Addr{a}
	}
	b := a.As16()
	switch {
	case nat64.Contains(a), nat64v2.Contains(a):
		return []netip.Addr{a, netip.AddrFrom4([4]byte(b[12:16]))}
	case sixTo4.Contains(a):
		return []netip.Addr{a, netip.AddrFrom4([4]byte(b[2:6]))}
	}
	return []netip.Addr{a}
}

// control is the net.Dialer.Control of guarded connections: it sees the
// address actually being connected to, after DNS resolution, so a name
// that resolves (or re-resolves) to a private address cannot get through.
func (g *Guard) control(host string) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		hp, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: cannot parse dial address %q: %v", ErrBlockedAddress, address, err)
		}
		return g.CheckAddr(host, hp.Addr())
	}
}

// DialContext dials addr ("host:port") through the guard: an allow-listed
// host dials freely, every other one only to addresses CheckAddr passes.
func (g *Guard) DialContext(d net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("web: dial %q: %w", addr, err)
		}
		if err := g.CheckHost(host); err != nil {
			return nil, err
		}
		dd := d
		if !g.HostAllowed(host) {
			dd.Control = g.control(host)
		}
		return dd.DialContext(ctx, network, addr)
	}
}
