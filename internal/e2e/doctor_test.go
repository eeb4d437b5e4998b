package e2e

import (
	"strings"
	"testing"
)

// doctor probes the model endpoint the binary would use (the fake's
// /v1/models) and fails when it is unreachable.
func TestDoctorProbesTheModelEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	var checks []struct {
		Name, Status, Detail string
	}
	e.MustRun("doctor", "--json").JSON(t, &checks)
	model := ""
	for _, c := range checks {
		if c.Name == "model" {
			model = c.Status + " " + c.Detail
		}
	}
	if model != "ok openai/fake reachable at "+e.Model.BaseURL()+"/models" {
		t.Fatalf("doctor model check = %q", model)
	}

	e.Model.Close()
	r := e.Run("doctor")
	if r.Code == 0 || !strings.Contains(r.Stdout, "model") || !strings.Contains(r.Stdout, e.Model.BaseURL()) {
		t.Fatalf("doctor with the model server down:\n%s", r)
	}
}
