package chat

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/controlapi"
)

// ErrNoGateway reports that nothing accepts connections on the control
// socket: no gateway runs on the data dir (or one died and left its socket).
var ErrNoGateway = errors.New("no gateway running")

// DialGateway connects to the gateway serving socket and authenticates with
// the token in tokenFile, read on every call so a rotated token is picked up.
//
// It returns an error wrapping ErrNoGateway only when the connection itself
// is refused, so callers may then fall back to working on the data dir
// directly. Once something accepted, every failure (unreadable token,
// refused hello) is a real error: falling back would bypass a live gateway.
func DialGateway(ctx context.Context, socket, tokenFile string) (*controlapi.Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w on %s", ErrNoGateway, socket)
		}
		return nil, fmt.Errorf("chat: dial gateway %s: %w", socket, err)
	}
	tok, err := auth.ReadTokenFile(tokenFile)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("chat: gateway on %s: %w", socket, err)
	}
	c, err := controlapi.NewClient(ctx, nc, tok)
	if err != nil {
		return nil, fmt.Errorf("chat: gateway on %s: %w", socket, err)
	}
	return c, nil
}
