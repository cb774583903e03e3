package web_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/runlog"
	"github.com/superfluid/superfluid/server/web"
)

// adminTeam is newTestTeam's team served by a web API that also has the admin routes' own
// parts: a runtime log and the machine's backends.
type adminTeam struct {
	*testTeam
	Log *runlog.Log
}

func newAdminTeam(t *testing.T) *adminTeam {
	t.Helper()
	base := newTestTeam(t)
	tt := *base
	at := &adminTeam{testTeam: &tt, Log: runlog.New(runlog.Config{})}
	devices := []lanes.Device{{Name: "cpu"}}
	q := quota.New(quota.Config{Store: tt.Store, Now: tt.Clock.Now})
	tt.API = web.New(web.Config{People: tt.People, Keys: tt.Keys, Bookings: tt.Bookings, Lanes: tt.Lanes, Devices: devices,
		Quota: q, Core: tt.Core, Store: tt.Store, Sessions: tt.Sessions, Now: tt.Clock.Now,
		RuntimeLog: at.Log, Backends: []backends.Backend{{Name: backends.CPU, Usable: true}}})
	srv := httptest.NewServer(server.New(server.Config{Keys: tt.Keys, People: tt.People, Lanes: tt.Lanes, Devices: devices,
		Bookings: tt.Bookings, Quota: q, Web: tt.API}, tt.Core))
	t.Cleanup(srv.Close)
	tt.URL = srv.URL
	return at
}

// list is the data of a list reply.
func (r reply) list() []map[string]any {
	data, _ := r.obj["data"].([]any)
	out := make([]map[string]any, 0, len(data))
	for _, d := range data {
		m, _ := d.(map[string]any)
		out = append(out, m)
	}
	return out
}

// field collects one field of each element, as text.
func field(items []map[string]any, name string) string {
	var out []string
	for _, it := range items {
		b, _ := json.Marshal(it[name])
		out = append(out, strings.Trim(string(b), `"`))
	}
	return strings.Join(out, ",")
}

// adminPaths are the admin routes in the OpenAPI document (storage excluded: part C's), as
// method and a concrete path.
func adminPaths(t *testing.T, tt *testTeam) [][2]string {
	t.Helper()
	r := send(t, "GET", tt.URL+"/api/openapi.json", "", nil)
	if r.status != 200 {
		t.Fatalf("openapi.json: %d", r.status)
	}
	paths, _ := r.obj["paths"].(map[string]any)
	var out [][2]string
	for p, ops := range paths {
		if !strings.HasPrefix(p, "/api/admin/") || strings.HasPrefix(p, "/api/admin/storage") {
			continue
		}
		concrete := p
		for strings.Contains(concrete, "{") {
			i, j := strings.Index(concrete, "{"), strings.Index(concrete, "}")
			concrete = concrete[:i] + "x" + concrete[j+1:]
		}
		for method := range ops.(map[string]any) {
			out = append(out, [2]string{strings.ToUpper(method), concrete})
		}
	}
	return out
}
