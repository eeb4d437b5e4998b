package cron

import (
	"reflect"
	"testing"

	"github.com/raven-agent/raven/internal/strictjson"
)

// The fast path of the snapshot decode accepts exactly what strictjson
// accepts, and decodes it to the same jobs.
func FuzzDecodeStrictAgrees(f *testing.F) {
	for _, s := range []string{
		`{"version":2,"generation":3,"jobs":[{"id":"j1","name":"standup","message":"m","schedule":{"kind":"every","every":"1h"},"deliver":true,"enabled":true,"created_at":"2026-11-30T08:00:00Z","fires":3}]}`,
		`{"version":1,"jobs":[{"id":"j1","Name":"case"}]}`, `{"version":1,"jobs":[{"id":"j1","x":1}]}`, `{"version":1,"jobs":[]} {}`,
		`{"version":1,"jobs":[{"id":"\ud800"}]}`, `{"version":1,"version":2,"jobs":null}`, `{"version":1.5}`, `{"jobs":[{"created_at":"nope"}]}`,
		"{\"version\":1,\"jobs\":[{\"id\":\"\xff\"}]}", `{"version":1,"jobs":[{"claim":{"pid":-1}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		type file struct {
			Version    *int  `json:"version"`
			Generation int64 `json:"generation"`
			Jobs       []Job `json:"jobs"`
		}
		var slow, fast file
		serr := strictjson.Decode(data, &slow)
		ferr := strictjson.DecodeLarge(data, &fast)
		if (serr == nil) != (ferr == nil) {
			t.Fatalf("strictjson: %v; fast path: %v; input %q", serr, ferr, data)
		}
		if serr == nil && !reflect.DeepEqual(slow, fast) {
			t.Fatalf("decoded differently:\nstrictjson %+v\nfast       %+v\ninput %q", slow, fast, data)
		}
	})
}
