package runtime

import (
	"context"

	"github.com/raven-agent/raven/internal/web"
)

// buildWeb registers web_fetch and web_search (package web) from
// tools.web. web_search is registered even without a backend: it then
// answers with what to configure, so the owner learns how to turn it on.
func (r *Runtime) buildWeb(_ context.Context, _ Options) error {
	w, err := web.New(r.cfg.Tools.Web, web.Options{Logger: r.log.With("component", "web")})
	if err != nil {
		return err
	}
	ts, err := w.Tools()
	if err != nil {
		return err
	}
	for _, t := range ts {
		r.toolReg.Register(t)
	}
	r.AddCloser(func(context.Context) error { w.Close(); return nil })
	return nil
}
