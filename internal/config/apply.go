package config

import "fmt"

// Apply returns base with the values of the named keys taken from from:
// how a running gateway takes the keys it can apply live from a reloaded
// file while every other key keeps its start-up value.
func Apply(base, from Config, keys []string) (Config, error) {
	for _, name := range keys {
		k, err := LookupKey(name)
		if err != nil {
			return base, fmt.Errorf("config: apply %s: %w", name, err)
		}
		k.value(&base).Set(k.value(&from))
	}
	return base, nil
}
