package mgr

import (
	_ "embed"
	"encoding/json"
	"net/http"
)

//go:embed dashboard.html
var dashboardPage []byte

// Handler serves the dashboard: GET / is the page (self-contained: no
// script, style or font from elsewhere), which draws itself from GET
// /api/status (a Snapshot as JSON) and fetches it again every period.
// Anything else is 404; a method other than GET or HEAD is 405.
func (m *Mgr) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(dashboardPage)
	})
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		enc.Encode(struct {
			Snapshot
			PeriodSec float64 `json:"period_sec"`
		}{m.Snapshot(), m.opt.Period.Seconds()})
	})
	return mux
}
