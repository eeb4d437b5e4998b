package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/outbox"
)

type gatewayStatus struct {
	Running bool `json:"running"`
	PID     int  `json:"pid"`
	Gateway struct {
		DataDir string `json:"data_dir"`
		Model   string `json:"model"`
	} `json:"gateway"`
}

func TestGatewayStartsReportsAndStops(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	t.Logf("gateway ready in %s, idle RSS %d KiB", g.ReadyIn.Round(time.Millisecond), g.RSSKiB())

	var st gatewayStatus
	e.MustRun("gateway", "status", "--json").JSON(t, &st)
	if !st.Running || st.PID != g.PID() || st.Gateway.Model != DefaultModel || st.Gateway.DataDir != e.DataDir {
		t.Fatalf("status = %+v (gateway pid %d)", st, g.PID())
	}
	// The control socket answers the same status to an operator client.
	viaAPI := Call(e, api.GatewayStatus, api.Empty{})
	if viaAPI.PID != g.PID() {
		t.Fatalf("gateway.status over the socket = %+v", viaAPI)
	}
	// One gateway per data dir.
	if r := e.Run("gateway"); r.Code == 0 || !strings.Contains(r.Stderr, "running") {
		t.Fatalf("second gateway on the same data dir:\n%s", r)
	}

	g.Stop()
	st = gatewayStatus{}
	// Not running is exit 3 in either format; --json still prints.
	r := e.Run("gateway", "status", "--json")
	if r.Code != 3 {
		t.Fatalf("status --json of a stopped gateway exited %d, want 3:\n%s", r.Code, r)
	}
	r.JSON(t, &st)
	if st.Running {
		t.Fatalf("status after stop = %+v", st)
	}
	if r := e.Run("gateway", "status"); r.Code != 3 || !strings.Contains(r.Stdout, "not running") {
		t.Fatalf("status of a stopped gateway:\n%s", r)
	}
}

func TestChatOneShotBesideGateway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()
	r := e.MustRun("chat", "-m", "hello from the cli")
	if !strings.Contains(r.Stdout, "fake reply to: hello from the cli") {
		t.Fatalf("chat -m beside a gateway:\n%s\ngateway log:\n%s", r, g.Log())
	}
	g.Stop()
}

// The outbox is read through WAL beside a live gateway: `raven inbox`
// lists what a producer queued, and `inbox clear` empties it.
func TestInboxBesideGateway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	g := e.StartGateway()

	ctx := context.Background()
	st := e.Outbox()
	id, err := st.Put(ctx, outbox.Item{Origin: outbox.OriginCron, Kind: "reply", Content: "Stand-up in 5 minutes", CreatedAt: time.Now().Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}

	r := e.MustRun("inbox")
	if !strings.Contains(r.Stdout, "1 message(s) waiting") || !strings.Contains(r.Stdout, "Stand-up in 5 minutes") || !strings.Contains(r.Stdout, id) {
		t.Fatalf("inbox:\n%s", r)
	}
	var listing struct {
		Pending int           `json:"pending"`
		Items   []outbox.Item `json:"items"`
	}
	e.MustRun("inbox", "--json").JSON(t, &listing)
	if listing.Pending != 1 || listing.Items[0].ID != id || listing.Items[0].Origin != outbox.OriginCron {
		t.Fatalf("inbox --json = %+v", listing)
	}
	if r := e.MustRun("inbox", "clear"); strings.TrimSpace(r.Stdout) != "cleared 1 message(s)" {
		t.Fatalf("inbox clear:\n%s", r)
	}
	if it, err := st.Get(ctx, id); err != nil || it.DeliveredTo != "cli" {
		t.Fatalf("after clear: %+v, %v", it, err)
	}
	if r := e.MustRun("inbox"); strings.TrimSpace(r.Stdout) != "inbox empty" {
		t.Fatalf("inbox after clear:\n%s", r)
	}
	g.Stop()
}
