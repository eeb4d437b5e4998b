package config

import "time"

// GatewayConfig configures `raven gateway`.
type GatewayConfig struct {
	// UserPool bounds concurrent user turns.
	UserPool      int      `json:"user_pool"`
	ShutdownGrace Duration `json:"shutdown_grace"`
}

func defaultGateway() GatewayConfig {
	return GatewayConfig{UserPool: 4, ShutdownGrace: Duration(10 * time.Second)}
}

func (g GatewayConfig) validate() error {
	if g.UserPool < 1 || g.UserPool > 256 {
		return &Error{Key: "gateway.user_pool", Msg: "must be 1..256"}
	}
	return nil
}
