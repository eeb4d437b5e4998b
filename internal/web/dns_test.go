package web

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// fakeResolver answers A/AAAA queries from names (lower case, no trailing
// dot) over an in-memory stream, as a DNS server an attacker controls
// would: the names point wherever the test says.
func fakeResolver(t *testing.T, names map[string]string) *net.Resolver {
	t.Helper()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		client, server := net.Pipe()
		go serveDNS(server, names)
		return client, nil
	}}
}

// serveDNS answers TCP-framed queries on c until it closes.
func serveDNS(c net.Conn, names map[string]string) {
	defer c.Close()
	for {
		var n uint16
		if err := binary.Read(c, binary.BigEndian, &n); err != nil {
			return
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		var q dnsmessage.Message
		if q.Unpack(buf) != nil || len(q.Questions) != 1 {
			return
		}
		qq := q.Questions[0]
		resp := dnsmessage.Message{Header: dnsmessage.Header{ID: q.ID, Response: true, Authoritative: true}, Questions: q.Questions}
		name := strings.TrimSuffix(strings.ToLower(qq.Name.String()), ".")
		ip, ok := names[name]
		if !ok {
			resp.RCode = dnsmessage.RCodeNameError
		} else if a := netip.MustParseAddr(ip); a.Is4() && qq.Type == dnsmessage.TypeA {
			resp.Answers = append(resp.Answers, dnsmessage.Resource{Header: dnsmessage.ResourceHeader{Name: qq.Name, Type: qq.Type, Class: qq.Class, TTL: 1},
				Body: &dnsmessage.AResource{A: a.As4()}})
		} else if a.Is6() && qq.Type == dnsmessage.TypeAAAA {
			resp.Answers = append(resp.Answers, dnsmessage.Resource{Header: dnsmessage.ResourceHeader{Name: qq.Name, Type: qq.Type, Class: qq.Class, TTL: 1},
				Body: &dnsmessage.AAAAResource{AAAA: a.As16()}})
		}
		out, err := resp.Pack()
		if err != nil {
			return
		}
		if binary.Write(c, binary.BigEndian, uint16(len(out))) != nil {
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}
