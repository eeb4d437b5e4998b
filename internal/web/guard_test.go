package web

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// Every refused class, judged as the address the dial really uses.
func TestGuardRefusesNonPublicAddresses(t *testing.T) {
	g, err := NewGuard(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ addr, class string }{
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.10", "private"},
		{"fd12:3456::1", "private (ULA)"},
		{"169.254.10.1", "link-local"},
		{"fe80::1", "link-local"},
		{"100.64.0.1", "CGNAT"},
		{"100.127.255.254", "CGNAT"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "this-network"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"169.254.169.254", "cloud metadata"},
		{"fd00:ec2::254", "cloud metadata"},
		{"100.100.100.200", "cloud metadata"},
		// IPv4-mapped IPv6 is the IPv4 it carries.
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:169.254.169.254", "cloud metadata"},
		// NAT64 and 6to4 route to the IPv4 they embed.
		{"64:ff9b::a00:1", "private"},
		{"2002:7f00:1::1", "loopback"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"fe80::1%eth0", "link-local"},
	}
	for _, c := range cases {
		t.Run(c.addr, func(t *testing.T) {
			err := g.CheckAddr("h.example", netip.MustParseAddr(c.addr))
			var be *BlockedError
			if !errors.As(err, &be) || be.Class != c.class || !errors.Is(err, ErrBlockedAddress) {
				t.Fatalf("CheckAddr(%s) = %v, want class %q", c.addr, err, c.class)
			}
			if !strings.Contains(err.Error(), "allow_hosts or allow_cidrs") {
				t.Fatalf("the refusal does not say how to allow it: %v", err)
			}
		})
	}
	for _, ok := range []string{"93.184.215.14", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"} {
		if err := g.CheckAddr("h.example", netip.MustParseAddr(ok)); err != nil {
			t.Errorf("public %s refused: %v", ok, err)
		}
	}
}

func TestGuardHostNames(t *testing.T) {
	g, _ := NewGuard([]string{"wiki.lan", "*.home.arpa"}, nil)
	cases := []struct {
		host  string
		class string // "" : passes
	}{
		{"metadata.google.internal", "cloud metadata"},
		{"METADATA.google.internal.", "cloud metadata"},
		{"localhost", "loopback"},
		{"app.localhost", "loopback"},
		{"127.0.0.1", "loopback"},
		{"[::1]", "loopback"},
		{"example.com", ""},
		{"wiki.lan", ""},
		{"nas.home.arpa", ""},
		{"home.arpa.evil.com", ""}, // passes the name check, judged at dial time
	}
	for _, c := range cases {
		err := g.CheckHost(c.host)
		var be *BlockedError
		switch {
		case c.class == "" && err != nil:
			t.Errorf("%s: refused: %v", c.host, err)
		case c.class != "" && (!errors.As(err, &be) || be.Class != c.class):
			t.Errorf("%s: %v, want class %q", c.host, err, c.class)
		}
	}
	if g.HostAllowed("evilhome.arpa") || !g.HostAllowed("Nas.Home.Arpa") || g.HostAllowed("wiki.lan.evil") {
		t.Fatal("allow_hosts patterns match the wrong names")
	}
}

func TestGuardAllowCIDRs(t *testing.T) {
	g, err := NewGuard(nil, []string{"127.0.0.1", "192.168.1.0/24", "::ffff:10.9.0.0/112"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{"127.0.0.1", "::ffff:127.0.0.1", "192.168.1.77", "10.9.3.4"} {
		if err := g.CheckAddr("h", netip.MustParseAddr(ok)); err != nil {
			t.Errorf("allow-listed %s refused: %v", ok, err)
		}
	}
	for _, no := range []string{"127.0.0.2", "192.168.2.1", "10.8.0.1"} {
		if err := g.CheckAddr("h", netip.MustParseAddr(no)); !errors.Is(err, ErrBlockedAddress) {
			t.Errorf("%s outside the allow-list passed: %v", no, err)
		}
	}
	if _, err := NewGuard(nil, []string{"10.0.0.0/33"}); err == nil {
		t.Fatal("a bad CIDR was accepted")
	}
}

// The check runs at dial time on the resolved address: a public-looking
// name that resolves to loopback (DNS rebinding) is refused, the same name
// allow-listed by host goes through.
func TestGuardDialChecksResolvedAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	res := fakeResolver(t, map[string]string{"rebind.example": "127.0.0.1", "mapped.example": "::ffff:127.0.0.1"})
	for _, tc := range []struct {
		name    string
		allow   []string
		refused bool
	}{
		{"rebind.example", nil, true},
		{"rebind.example", []string{"rebind.example"}, false},
		{"mapped.example", nil, true},
	} {
		g, _ := NewGuard(tc.allow, nil)
		dial := g.DialContext(net.Dialer{Resolver: res})
		c, err := dial(context.Background(), "tcp", net.JoinHostPort(tc.name, port))
		if c != nil {
			c.Close()
		}
		if tc.refused != errors.Is(err, ErrBlockedAddress) {
			t.Errorf("%s (allow %v): err = %v, refused want %v", tc.name, tc.allow, err, tc.refused)
		}
	}
}
