package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// keyCase overrides the values the type alone suggests for one key.
type keyCase struct {
	good  string
	bad   string
	setup [][2]string // keys set first, so good is valid in context
	// free: every string is a valid value (prose, names); no bad value.
	free bool
}

var keyCases = map[string]keyCase{
	"tools.exec.max_output":                     {good: "1024", bad: "10"},
	"sentinel.policy.topic_reject_max_factor":   {good: "5", bad: "0.5"},
	"heartbeat.max_file_bytes":                  {good: "2048", bad: "10"},
	"gateway.events_max_count":                  {good: "5000", bad: "10"},
	"channels.webhook.max_body":                 {good: "1024", bad: "10"},
	"model":                                     {good: "openai/gpt-4o-mini", bad: "nonsense"},
	"providers.openai.base_url":                 {good: "http://127.0.0.1:9/v1", bad: "localhost:9"},
	"providers.anthropic.base_url":              {good: "https://api.example.com", bad: "ftp://x"},
	"providers.ollama.base_url":                 {good: "http://127.0.0.1:11434", bad: "11434"},
	"providers.openai.api_key":                  {good: "sk-test", bad: "sk\nx"},
	"providers.anthropic.api_key":               {good: "sk-ant", bad: "a\tb"},
	"providers.ollama.api_key":                  {good: "k", bad: "k\r"},
	"providers.max_attempts":                    {bad: "11"},
	"agent.system_prompt":                       {good: "You are terse.", free: true},
	"agent.max_iterations":                      {bad: "0"},
	"agent.memory_bytes":                        {good: "4096", bad: "10"},
	"agent.stream":                              {good: "false", bad: "sometimes"},
	"tools.exec.deny":                           {good: "rm -rf,shutdown", bad: "[1,2]"},
	"tools.exec.unsandboxed":                    {good: "approve", bad: "yes"},
	"tools.exec.approval_ttl":                   {good: "5m", bad: "1s"},
	"tools.exec.env_allow":                      {good: "LANG,TZ", bad: "OPENAI_API_KEY"},
	"tools.search_threshold":                    {good: "60", bad: "0"},
	"tools.web.fetch.max_bytes":                 {good: "65536", bad: "10"},
	"tools.web.fetch.max_chars":                 {good: "8000", bad: "10"},
	"tools.web.fetch.timeout":                   {good: "45s", bad: "0s"},
	"tools.web.fetch.max_redirects":             {good: "2", bad: "21"},
	"tools.web.fetch.user_agent":                {good: "MyRaven/2", bad: "a\nb"},
	"tools.web.fetch.allow_hosts":               {good: "wiki.lan,*.home.arpa", bad: "bad host!"},
	"tools.web.fetch.allow_cidrs":               {good: "192.168.1.0/24,127.0.0.1", bad: "10.0.0.0/33"},
	"tools.web.search.backend":                  {good: "brave", bad: "google"},
	"tools.web.search.base_url":                 {good: "http://127.0.0.1:8888", bad: "localhost:8888"},
	"tools.web.search.api_key":                  {good: "BSA-test", bad: "a\nb"},
	"tools.web.search.count":                    {good: "10", bad: "21"},
	"tools.web.search.language":                 {good: "de", bad: "not a language"},
	"tools.web.search.safe_search":              {good: "strict", bad: "maybe"},
	"tools.web.search.timeout":                  {good: "30s", bad: "10m"},
	"sentinel.planner_model":                    {good: "ollama/qwen2.5:7b", bad: "bogus/x"},
	"sentinel.attention_sections":               {good: "Deadlines,Mine", bad: `[1]`},
	"sentinel.interval":                         {bad: "10s"},
	"sentinel.date_order":                       {good: "mdy", bad: "ymd"},
	"sentinel.calendar.path":                    {good: "/home/me/calendar.ics", bad: "calendar.ics"},
	"sentinel.calendar.horizon":                 {good: "72h", bad: "10m"},
	"sentinel.calendar.max":                     {good: "5", bad: "0"},
	"sentinel.analysis.hour":                    {good: "7", bad: "24"},
	"sentinel.decision_confidence":              {good: "0.8", bad: "1.5"},
	"sentinel.defer_max_wait":                   {good: "5h", bad: "1m"},
	"sentinel.policy.quiet_hours.name":          {good: "night", free: true},
	"sentinel.policy.quiet_hours.start":         {good: "22:30", bad: "25:99"},
	"sentinel.policy.quiet_hours.end":           {good: "06:30", bad: "7am"},
	"sentinel.policy.quiet_hours.days":          {good: "1,2,3", bad: "9"},
	"sentinel.policy.persona_dnd":               {good: `[{"name":"gym","start":"18:00","end":"19:00","days":[1,3]}]`, bad: `[{"start":"nope"}]`},
	"sentinel.policy.day_quota":                 {bad: "-1"},
	"sentinel.policy.weekend_factor":            {good: "0.6", bad: "0"},
	"sentinel.policy.adaptive.gain":             {bad: "-1"},
	"sentinel.policy.adaptive.min_multiplier":   {good: "0.6", bad: "2"},
	"sentinel.policy.adaptive.max_multiplier":   {good: "1.6", bad: "0.5"},
	"sentinel.policy.adaptive.cold_start_floor": {good: "0.8", bad: "1.5"},
	"sentinel.policy.adaptive.target_rate":      {good: "0.6", bad: "1.5"},
	"sentinel.policy.ledger_cap":                {bad: "0"},
	"cron.job_timeout":                          {good: "5m", bad: "0s"},
	"cron.claim_ttl":                            {good: "30m", bad: "1m"},
	"cron.max_sleep":                            {good: "2s", bad: "2m"},
	"heartbeat.channel":                         {good: "telegram", bad: "Tele gram"},
	"heartbeat.chat_id":                         {good: "123", bad: "a\nb", setup: [][2]string{{"heartbeat.channel", "telegram"}}},
	"heartbeat.wake_min_interval":               {good: "5m", bad: "2h"},
	"gateway.tcp_listen":                        {good: "127.0.0.1:9443", bad: "9443", setup: [][2]string{{"gateway.tls_cert", "/c.pem"}, {"gateway.tls_key", "/k.pem"}}},
	"gateway.tls_cert":                          {good: "/etc/raven/cert.pem", bad: "a\nb"},
	"gateway.tls_key":                           {good: "/etc/raven/key.pem", bad: "a\nb"},
	"gateway.shutdown_grace":                    {good: "30s", bad: "1h"},
	"gateway.user_pool":                         {bad: "0"},
	"channels.forward":                          {good: "telegram:123,webhook:x", bad: "Bad Channel:1"},
	"channels.webhook.listen":                   {good: "127.0.0.1:9999", bad: "8787"},
	"channels.webhook.name":                     {good: "hook2", bad: "../x"},
	"channels.webhook.secret":                   {good: "s3cret", bad: "a\nb"},
	"channels.webhook.outbound_url":             {good: "https://example.com/in", bad: "ftp://x"},
	"channels.webhook.window":                   {good: "10m", bad: "2h"},
	"channels.telegram.enabled":                 {good: "true", bad: "yes please", setup: [][2]string{{"channels.telegram.allow_from", "42"}}},
	"channels.telegram.token":                   {good: "123:abc", bad: "a\nb"},
	"channels.telegram.allow_from":              {good: "42,43", bad: "-5"},
	"channels.telegram.allow_chats":             {good: "-1001234,-1005678", bad: "0"},
	"channels.telegram.api_url":                 {good: "http://127.0.0.1:8081", bad: "localhost:8081"},
	"channels.telegram.stream":                  {good: "false", bad: "edits"},
	"channels.telegram.stream_interval":         {good: "3s", bad: "10ms"},
	"mcp.servers":                               {good: `{"fs":{"command":"/usr/bin/mcp-fs","args":["--root","."]},"web":{"url":"https://mcp.example.com/mcp","headers":{"Authorization":"Bearer x"}}}`, bad: `{"Bad Name":{"command":"x"}}`},
	"mcp.call_timeout":                          {good: "30s", bad: "1ms"},
	"log.format":                                {good: "json", bad: "xml"},
	"usage.caps":                                {good: `{"sentinel":{"daily_tokens":100000,"monthly_usd":5}}`, bad: `{"nobody":{"daily_tokens":1}}`},
	"usage.prices":                              {good: `{"openai/gpt-4o-mini":{"input":0.15,"output":0.6,"cached":0.075}}`, bad: `{"openai/gpt-4o-mini":{"input":-1,"output":0}}`},
	"log.level":                                 {good: "debug", bad: "loud"},
}

// byType is the good and bad value a key's type alone suggests.
func byType(k Key, def string) (good, bad string) {
	switch k.Type {
	case "bool":
		if def == "true" {
			return "false", "maybe"
		}
		return "true", "maybe"
	case "int":
		return "7", "many"
	case "number":
		return "0.9", "lots"
	case "duration":
		return "3h", "soon"
	}
	return "", ""
}

// TestEveryKey goes through every key of the schema: get works on the
// defaults, a valid set round-trips through the file and a reload, and a
// bad set is refused naming the full dotted key, leaving the file alone.
func TestEveryKey(t *testing.T) {
	keys := Keys()
	if len(keys) < 100 {
		t.Fatalf("only %d keys derived from the schema", len(keys))
	}
	def := Default()
	for _, k := range keys {
		t.Run(k.Name, func(t *testing.T) {
			c := keyCases[k.Name]
			good, bad := byType(k, k.Text(def))
			if c.good != "" {
				good = c.good
			}
			if c.bad != "" {
				bad = c.bad
			}
			if good == "" || (bad == "" && !c.free) {
				t.Fatalf("no test values for %s (type %s): add it to keyCases", k.Name, k.Type)
			}
			if _, err := Get(def, k.Name); err != nil {
				t.Fatalf("get on the defaults: %v", err)
			}
			p := filepath.Join(t.TempDir(), "config.json")
			for _, s := range c.setup {
				if err := Set(p, s[0], s[1]); err != nil {
					t.Fatalf("setup %s: %v", s[0], err)
				}
			}
			if err := Set(p, k.Name, good); err != nil {
				t.Fatalf("set %s=%q: %v", k.Name, good, err)
			}
			cfg, err := Load(p)
			if err != nil {
				t.Fatalf("reload: %v", err)
			}
			want, err := k.ParseValue(good)
			if err != nil {
				t.Fatal(err)
			}
			if got := k.JSON(cfg); string(got) != string(want) {
				t.Fatalf("after set %q: reloaded %s, want %s", good, got, want)
			}
			if string(want) == string(k.JSON(def)) {
				t.Fatalf("good value %q equals the default: the round trip proves nothing", good)
			}
			v, err := Get(cfg, k.Name)
			if err != nil || !reflect.DeepEqual(v, generic(want)) {
				t.Fatalf("get after set = %#v %v, want %s", v, err, want)
			}
			if again, err := k.ParseValue(k.Text(cfg)); err != nil || string(again) != string(want) {
				t.Fatalf("the text get prints (%q) does not set back: %s %v", k.Text(cfg), again, err)
			}
			if c.free {
				return
			}
			before, _ := os.ReadFile(p)
			err = Set(p, k.Name, bad)
			var ce *Error
			if !errors.As(err, &ce) || ce.Key != k.Name {
				t.Fatalf("set %s=%q: err = %v, want an *Error naming %s", k.Name, bad, err, k.Name)
			}
			if !strings.Contains(err.Error(), k.Name) {
				t.Fatalf("message %q does not name %s", err, k.Name)
			}
			if after, _ := os.ReadFile(p); string(after) != string(before) {
				t.Fatal("a refused set changed the file")
			}
		})
	}
}

func TestKeyLookupErrors(t *testing.T) {
	tests := []struct{ key, want string }{
		{"no.such.key", "known here: agent, channels"},
		{"channels.nope", "known here: forward, telegram, webhook"},
		{"channels.webhook", "is a section; use one of its keys: enabled"},
		{"sentinel.policy.adaptive.x", "known here: cold_start_floor"},
		{"", "empty key (known: agent, channels"},
	}
	for _, tt := range tests {
		_, err := LookupKey(tt.key)
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != tt.key || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.key, err, tt.want)
		}
	}
}

func TestUnsetRestoresDefault(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	if err := Set(p, "channels.forward", `["telegram:1"]`); err != nil {
		t.Fatal(err)
	}
	if err := Unset(p, "channels.forward"); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(p)
	if err != nil || len(cfg.Channels.Forward) != 0 {
		t.Fatalf("after unset: %v %v", cfg.Channels.Forward, err)
	}
}

func TestSetKeepsLargeIntegers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	if err := Set(p, "channels.telegram.allow_from", "9007199254740993"); err != nil {
		t.Fatal(err)
	}
	if err := Set(p, "log.level", "debug"); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(p)
	if err != nil || len(cfg.Channels.Telegram.AllowFrom) != 1 || cfg.Channels.Telegram.AllowFrom[0] != 9007199254740993 {
		t.Fatalf("allow_from after another set: %v %v", cfg.Channels.Telegram.AllowFrom, err)
	}
}

func TestChanged(t *testing.T) {
	a := Default()
	b := Default()
	b.Channels.Forward = []string{}
	if got := Changed(a, b); len(got) != 0 {
		t.Fatalf("defaults differ: %v", got)
	}
	b.Heartbeat.Interval = Duration(time.Hour)
	b.Channels.Forward = []string{"telegram:1"}
	b.Sentinel.Policy.QuietHours.Start = 60
	got := strings.Join(Changed(a, b), " ")
	if got != "sentinel.policy.quiet_hours.start heartbeat.interval channels.forward" {
		t.Fatalf("changed = %q", got)
	}
}

// TestParseTextShapes covers the value shapes the schema may grow into,
// beyond those it has today (maps, unsigned and optional values).
func TestParseTextShapes(t *testing.T) {
	type item struct {
		Name string `json:"name"`
	}
	tests := []struct {
		name string
		typ  reflect.Type
		in   string
		want string // JSON; "" means refused
	}{
		{"string verbatim", reflect.TypeFor[string](), `a, "b"`, `"a, \"b\""`},
		{"uint", reflect.TypeFor[uint16](), "42", "42"},
		{"uint negative", reflect.TypeFor[uint16](), "-1", ""},
		{"int overflow", reflect.TypeFor[int8](), "300", ""},
		{"float", reflect.TypeFor[float64](), "0.25", "0.25"},
		{"float nan", reflect.TypeFor[float64](), "NaN", ""},
		{"duration", reflect.TypeFor[Duration](), "1h30m", `"1h30m"`},
		{"list comma", reflect.TypeFor[[]string](), "a, b", `["a","b"]`},
		{"list json", reflect.TypeFor[[]string](), `["a,b"]`, `["a,b"]`},
		{"list empty", reflect.TypeFor[[]string](), "", `[]`},
		{"list of durations", reflect.TypeFor[[]Duration](), "1m,2m", `["1m","2m"]`},
		{"list bad item", reflect.TypeFor[[]int](), "1,x", ""},
		{"list of objects", reflect.TypeFor[[]item](), `[{"name":"x"}]`, `[{"name":"x"}]`},
		{"list of objects unknown field", reflect.TypeFor[[]item](), `[{"nope":1}]`, ""},
		{"map", reflect.TypeFor[map[string]int](), `{"a":1}`, `{"a":1}`},
		{"map trailing", reflect.TypeFor[map[string]int](), `{"a":1}}`, ""},
		{"optional set", reflect.TypeFor[*int](), "5", "5"},
		{"optional cleared", reflect.TypeFor[*int](), "null", "null"},
		{"optional bad", reflect.TypeFor[*int](), "x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := Key{Name: "x.y", Type: typeName(tt.typ), typ: tt.typ}
			got, err := k.ParseValue(tt.in)
			switch {
			case tt.want == "":
				var ce *Error
				if !errors.As(err, &ce) || ce.Key != "x.y" {
					t.Fatalf("%q accepted as %s (err %v)", tt.in, got, err)
				}
			case err != nil || string(got) != tt.want:
				t.Fatalf("%q: %s %v, want %s", tt.in, got, err, tt.want)
			}
		})
	}
}

// Apply takes exactly the named keys from the other config.
func TestApplyTakesOnlyNamedKeys(t *testing.T) {
	base, next := Default(), Default()
	next.Heartbeat.Interval = Duration(45 * time.Minute)
	next.Channels.Forward = []string{"telegram:1"}
	next.Gateway.UserPool = base.Gateway.UserPool + 3
	got, err := Apply(base, next, []string{"heartbeat.interval", "channels.forward"})
	if err != nil {
		t.Fatal(err)
	}
	if changed := Changed(got, next); len(changed) != 1 || changed[0] != "gateway.user_pool" {
		t.Fatalf("after Apply the configs differ in %v, want only gateway.user_pool", changed)
	}
	if _, err := Apply(base, next, []string{"no.such.key"}); err == nil {
		t.Fatal("Apply accepted an unknown key")
	}
}

// TestMapEntryKeys: the entries of a map of sections (mcp.servers.NAME)
// are reached field by field, validated as a whole, and unset one by one.
func TestMapEntryKeys(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	steps := []struct{ key, value string }{
		{"mcp.servers.fs.command", "/usr/bin/mcp-fs"},
		{"mcp.servers.fs.args", "--root,."},
		{"mcp.servers.fs.call_timeout", "5s"},
		{"mcp.servers.web", `{"url":"https://mcp.example.com/mcp"}`},
	}
	for _, s := range steps {
		if err := Set(p, s.key, s.value); err != nil {
			t.Fatalf("set %s: %v", s.key, err)
		}
	}
	cfg, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	fs := cfg.MCP.Servers["fs"]
	if fs.Command != "/usr/bin/mcp-fs" || strings.Join(fs.Args, " ") != "--root ." || fs.CallTimeout.D() != 5*time.Second || cfg.MCP.Servers["web"].URL == "" {
		t.Fatalf("servers = %+v", cfg.MCP.Servers)
	}
	if v, err := Get(cfg, "mcp.servers.fs.command"); err != nil || v != "/usr/bin/mcp-fs" {
		t.Fatalf("get = %v %v", v, err)
	}
	if k, err := LookupKey("mcp.servers.fs.command"); err != nil || k.Type != "string" || k.Secret {
		t.Fatalf("command key = %+v %v", k, err)
	}
	k, err := LookupKey("mcp.servers.fs.env")
	if err != nil || k.Type != "JSON" || !k.Secret {
		t.Fatalf("env key = %+v %v", k, err)
	}
	// A field that would make the entry invalid is refused, naming it.
	err = Set(p, "mcp.servers.fs.url", "https://x.example.com")
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `server "fs"`) || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("set url beside command: %v", err)
	}
	if _, err := LookupKey("mcp.servers.fs.nope"); err == nil || !strings.Contains(err.Error(), "known here: command, args") {
		t.Fatalf("unknown field: %v", err)
	}
	if err := Unset(p, "mcp.servers.web"); err != nil {
		t.Fatal(err)
	}
	if cfg, _ = Load(p); len(cfg.MCP.Servers) != 1 {
		t.Fatalf("after unset: %+v", cfg.MCP.Servers)
	}
}
