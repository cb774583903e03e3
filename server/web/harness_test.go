package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/server/web"
	"github.com/superfluid/superfluid/server/web/sessions"
)

// clock is a settable clock shared by the sessions, the bookings and the web API.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// testTeam is a team-mode server over real SQLite with the web API mounted, served over real
// HTTP: the admin "root" (password "password0", key RootKey) and the member "bob" ("password1",
// key BobKey), one device "cpu" with the lane "main" serving the echo model "alpha".
type testTeam struct {
	URL             string
	Store           *store.Store
	People          *people.Service
	Keys            *auth.Keyring
	Bookings        *bookings.Service
	Lanes           *lanes.Manager
	Sessions        *sessions.Store
	API             *web.API
	Core            *core.Service
	Clock           *clock
	RootKey, BobKey string
}

func newTestTeam(t *testing.T) *testTeam {
	t.Helper()
	ctx := context.Background()
	tt := &testTeam{Clock: &clock{now: time.Now().UTC().Truncate(time.Second)}, Store: servertest.Store(t)}
	st := tt.Store
	var err error
	if tt.Keys, err = auth.New(ctx, auth.Config{Store: st, Required: true}); err != nil {
		t.Fatal(err)
	}
	tt.People = people.New(people.Config{Store: st, Keys: tt.Keys, Hash: people.HashParams{Memory: 64, Time: 1, Threads: 1}})
	for _, np := range []people.NewPerson{{Name: "root", Password: "password0", Role: people.RoleAdmin}, {Name: "bob", Password: "password1"}} {
		if _, err := tt.People.Create(ctx, people.CLI, np); err != nil {
			t.Fatal(err)
		}
	}
	if tt.RootKey, _, err = tt.Keys.Create(ctx, auth.NewKey{Name: "roots", Person: "root"}); err != nil {
		t.Fatal(err)
	}
	if tt.BobKey, _, err = tt.Keys.Create(ctx, auth.NewKey{Name: "bobs", Person: "bob"}); err != nil {
		t.Fatal(err)
	}
	echo := &servertest.Echo{}
	tt.Core = core.New(core.Config{}, st, servertest.EchoModel("alpha", echo))
	devices := []lanes.Device{{Name: "cpu"}}
	tt.Lanes = lanes.NewManager(lanes.Config{Store: st, Devices: devices, Catalog: tt.Core,
		Factory: func(ctx context.Context, spec lanes.Spec) (*core.Model, func(), error) {
			return servertest.EchoModel(spec.Lane.Model, echo), func() {}, nil
		}})
	t.Cleanup(func() { tt.Lanes.Close(ctx) })
	if _, err := tt.Lanes.Add(ctx, lanes.NewLane{Name: "main", Device: "cpu", Engine: lanes.Local, Model: "alpha"}); err != nil {
		t.Fatal(err)
	}
	for _, l := range tt.Lanes.Lanes() {
		select {
		case <-l.Settled():
		case <-time.After(5 * time.Second):
			t.Fatalf("lane %s did not settle", l.Name())
		}
	}
	tt.Bookings, err = bookings.New(bookings.Config{Store: st, Now: tt.Clock.Now, ResolveLane: func(ctx context.Context, nameOrID string) (bookings.LaneRef, error) {
		l, err := st.Lane(ctx, nameOrID)
		if errors.Is(err, store.ErrNotFound) {
			return bookings.LaneRef{}, &llm.StatusError{Status: http.StatusNotFound, Code: "lane_not_found", Message: "no lane " + nameOrID}
		}
		if err != nil {
			return bookings.LaneRef{}, err
		}
		return bookings.LaneRef{ID: l.ID, Device: l.Device}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	tt.Core.SetRouter(lanes.NewRouter(tt.Lanes, nil, tt.Core))
	q := quota.New(quota.Config{Store: st, Now: tt.Clock.Now})
	tt.Sessions = sessions.New(sessions.Config{Store: st, Now: tt.Clock.Now})
	tt.API = web.New(web.Config{People: tt.People, Keys: tt.Keys, Bookings: tt.Bookings, Lanes: tt.Lanes, Devices: devices,
		Quota: q, Core: tt.Core, Store: st, Sessions: tt.Sessions, Now: tt.Clock.Now})
	// The test's own loopback peer is a trusted proxy: X-Forwarded-For picks a request's address.
	srv := httptest.NewServer(server.New(server.Config{TrustedProxies: []string{"127.0.0.1"}, Keys: tt.Keys, People: tt.People, Lanes: tt.Lanes, Devices: devices,
		Bookings: tt.Bookings, Quota: q, Web: tt.API}, tt.Core))
	t.Cleanup(srv.Close)
	tt.URL = srv.URL
	return tt
}

// browser is one signed-in (or not) browser: its cookie and CSRF token.
type browser struct {
	t      *testing.T
	tt     *testTeam
	cookie string // the sf_session value; "" none
	csrf   string
}

func (tt *testTeam) browser(t *testing.T) *browser { return &browser{t: t, tt: tt} }

// signIn signs b in as name, failing the test if it cannot.
func (tt *testTeam) signIn(t *testing.T, name, password string) *browser {
	t.Helper()
	b := tt.browser(t)
	res := b.do("POST", "/api/auth/login", `{"name": "`+name+`", "password": "`+password+`"}`)
	if res.status != 200 {
		t.Fatalf("sign in %s: %d %s", name, res.status, res.body)
	}
	return b
}

// reply is an answer: status, headers, body, and the body decoded as an object (nil if not).
type reply struct {
	status int
	header http.Header
	body   []byte
	obj    map[string]any
}

// code is the error code of an error reply ("" none).
func (r reply) code() string {
	e, _ := r.obj["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (r reply) param() string {
	e, _ := r.obj["error"].(map[string]any)
	c, _ := e["param"].(string)
	return c
}

// do sends a request with b's cookie and (on writes) its CSRF token, plus headers (pairs);
// it keeps a cookie the reply sets. A header "Cookie" or "X-CSRF-Token" in headers replaces b's.
func (b *browser) do(method, path, body string, headers ...string) reply {
	b.t.Helper()
	h := http.Header{}
	if body != "" {
		h.Set("Content-Type", "application/json")
	}
	if b.cookie != "" {
		h.Set("Cookie", web.CookieName+"="+b.cookie)
	}
	if b.csrf != "" && method != "GET" {
		h.Set(web.CSRFHeader, b.csrf)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	r := send(b.t, method, b.tt.URL+path, body, h)
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == web.CookieName {
			b.cookie = c.Value
			if c.MaxAge < 0 {
				b.cookie = ""
			}
		}
	}
	if tok, ok := r.obj["csrf_token"].(string); ok && tok != "" {
		b.csrf = tok
	}
	return r
}

// send is one raw request.
func send(t *testing.T, method, url, body string, h http.Header) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: res.StatusCode, header: res.Header, body: data}
	_ = json.Unmarshal(data, &r.obj)
	return r
}

// withKey is a request with an API key and no cookie.
func (tt *testTeam) withKey(t *testing.T, key, method, path, body string, headers ...string) reply {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + key}}
	if body != "" {
		h.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	return send(t, method, tt.URL+path, body, h)
}

// storeAuditAll is an audit query for every entry.
func storeAuditAll() store.AuditQuery { return store.AuditQuery{Limit: 1000} }
