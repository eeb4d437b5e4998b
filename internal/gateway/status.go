package gateway

import "context"

// Status is the gateway's part of the gateway.status result.
type Status struct {
	DataDir         string   `json:"data_dir"`
	Model           string   `json:"model"`
	Channels        []string `json:"channels"`
	SentinelEnabled bool     `json:"sentinel_enabled"`
	UserBusy        bool     `json:"user_busy"`
}

func (g *Gateway) status(ctx context.Context) (any, error) {
	a := g.App
	return Status{DataDir: a.Paths.Root, Model: providerName(a), Channels: a.Hub.Channels(),
		SentinelEnabled: a.Config.Sentinel.Enabled, UserBusy: a.Scheduler.UserBusy()}, nil
}

// providerName names the model for logs and status; "none" when no model
// is configured.
func providerName(a *App) string {
	if a.Provider == nil {
		return "none"
	}
	return a.Provider.Name()
}
