package config

// CronConfig configures the cron service.
type CronConfig struct {
	Enabled bool `json:"enabled"`
}

func defaultCron() CronConfig { return CronConfig{Enabled: true} }

func (c CronConfig) validate() error { return nil }
