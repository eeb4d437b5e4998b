package web

import (
	"errors"
	"testing"

	"github.com/raven-agent/raven/internal/configtype"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	cases := []struct {
		field string
		edit  func(*Config)
	}{
		{"fetch.max_bytes", func(c *Config) { c.Fetch.MaxBytes = 10 }},
		{"fetch.allow_hosts", func(c *Config) { c.Fetch.AllowHosts = []string{"a b"} }},
		{"fetch.allow_cidrs", func(c *Config) { c.Fetch.AllowCIDRs = []string{"300.0.0.0/8"} }},
		{"search.backend", func(c *Config) { c.Search.Backend = "google" }},
		{"search.base_url", func(c *Config) { c.Search.Backend = BackendSearXNG }},
		{"search.count", func(c *Config) { c.Search.Count = 50 }},
		{"search.language", func(c *Config) { c.Search.Language = "e" }},
		{"search.safe_search", func(c *Config) { c.Search.SafeSearch = "on" }},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		c.edit(&cfg)
		var fe *configtype.FieldError
		if err := cfg.Validate(); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: %v", c.field, err)
		}
	}
	// New fills zero fields with the defaults once.
	w, err := New(Config{Fetch: FetchConfig{Enabled: true}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got := w.cfg.withDefaults(); got.Fetch.MaxBytes != DefaultMaxBytes || got.Search.Count != DefaultSearchCount || w.cfg.Fetch.UserAgent != DefaultUserAgent {
		t.Fatalf("defaults not applied: %+v", w.cfg)
	}
}
