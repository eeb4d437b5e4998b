package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"github.com/raven-agent/raven/internal/statefile"
	"github.com/raven-agent/raven/internal/strictjson"
)

// The tool-list cache is what lets an idle gateway offer a server's tools
// without starting it: each server's last listing is kept in
// <data dir>/mcp/NAME.tools.json (atomic replace), tagged with a
// fingerprint of how the server is reached, so a changed command or URL is
// listed afresh instead of trusting a stale cache.

// maxCacheBytes bounds one cache file (a server listing 1000 large schemas
// stays well below it).
const maxCacheBytes = 8 << 20

// CachedTool is one tool as its server listed it.
type CachedTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	InputSchema any    `json:"input_schema"`
}

type cacheFile struct {
	Server      string       `json:"server"`
	Fingerprint string       `json:"fingerprint"`
	Tools       []CachedTool `json:"tools"`
}

func (m *Manager) cachePath(name string) string {
	return filepath.Join(m.o.CacheDir, name+".tools.json")
}

// fingerprint identifies how a server is reached (not its secrets' values:
// env and headers are hashed, never stored).
func fingerprint(cfg ServerConfig) string {
	raw, _ := json.Marshal(struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
		Cwd     string            `json:"cwd"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}{cfg.Command, cfg.Args, cfg.Env, cfg.Cwd, cfg.URL, cfg.Headers})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:12])
}

// loadCache reads a server's cached listing. A corrupt file is moved aside
// and reported; a stale one (the server's config changed) is ignored.
func (m *Manager) loadCache(name string) (cacheFile, bool) {
	if m.o.CacheDir == "" {
		return cacheFile{}, false
	}
	path := m.cachePath(name)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return cacheFile{}, false
	}
	if err != nil {
		m.o.Logger.Warn("mcp tool cache unreadable", "server", name, "path", path, "err", err)
		return cacheFile{}, false
	}
	var c cacheFile
	err = strictjson.DecodeReader(f, maxCacheBytes, &c)
	f.Close()
	if err == nil && c.Server != name {
		err = errors.New("names another server")
	}
	if err != nil {
		moved, merr := statefile.MoveAside(path, m.o.Clock.Now())
		m.o.Logger.Warn("mcp tool cache corrupt, moved aside", "server", name, "path", path, "moved_to", moved, "err", err, "move_err", merr)
		return cacheFile{}, false
	}
	if c.Fingerprint != fingerprint(m.servers[name].cfg) {
		return cacheFile{}, false
	}
	if c.Tools == nil {
		c.Tools = []CachedTool{}
	}
	return c, true
}

func (m *Manager) saveCache(name string, cfg ServerConfig, listed []CachedTool) {
	if m.o.CacheDir == "" {
		return
	}
	raw, err := json.Marshal(cacheFile{Server: name, Fingerprint: fingerprint(cfg), Tools: listed})
	if err == nil {
		err = statefile.WriteAtomic(m.cachePath(name), raw, 0o600)
	}
	if err != nil {
		m.o.Logger.Warn("mcp tool cache not written", "server", name, "err", err)
	}
}
