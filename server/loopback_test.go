package server_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/servertest"
)

// Who counts as "this machine" without keys: a program on loopback, never a web page or a
// client behind a local proxy.

// TestLoopbackAdminNotForWebPages: without keys a loopback client is admin, but not a web
// page: any page served from a localhost port is allowed by the default CORS origins and
// reaches the server from 127.0.0.1. Its POST /v1/keys (which would hand it an admin key) and
// the other admin routes get 403 admin_required and do nothing; the same request from a
// program on this machine (no Origin) still works.
func TestLoopbackAdminNotForWebPages(t *testing.T) {
	ctx := context.Background()
	cat := servertest.NewCatalog(t, models.Config{})
	cat.AddModel(t, "m1", gguftest.TinyLlamaOptions{})
	keys, err := auth.New(ctx, auth.Config{Store: cat.Store})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Config{Keys: keys, Bind: server.NewBind("127.0.0.1")}, cat.Svc))
	t.Cleanup(srv.Close)
	page := func(h ...string) *openai.Client {
		opts := []option.RequestOption{option.WithBaseURL(srv.URL + "/v1"), option.WithMaxRetries(0)}
		for i := 0; i+1 < len(h); i += 2 {
			opts = append(opts, option.WithHeader(h[i], h[i+1]))
		}
		c := openai.NewClient(opts...)
		return &c
	}
	for _, h := range [][]string{
		{"Origin", "http://localhost:3000"},
		{"Origin", "http://127.0.0.1:5173", "Sec-Fetch-Site", "same-site"},
		{"Sec-Fetch-Site", "same-site"}, // a no-cors request carries no Origin
	} {
		var e *openai.Error
		var created map[string]any
		err := page(h...).Post(ctx, "keys", map[string]any{"name": "stolen", "admin": true}, &created)
		if !errors.As(err, &e) || e.StatusCode != 403 || e.Code != "admin_required" || !strings.Contains(e.Message, "web pages") {
			t.Fatalf("%v: POST /v1/keys: %v %v", h, err, created)
		}
		if err := page(h...).Post(ctx, "models/load", map[string]any{"model": "m1"}, nil); !errors.As(err, &e) || e.StatusCode != 403 || e.Code != "admin_required" {
			t.Fatalf("%v: POST /v1/models/load: %v", h, err)
		}
		if err := page(h...).Get(ctx, "keys", nil, nil); !errors.As(err, &e) || e.StatusCode != 403 {
			t.Fatalf("%v: GET /v1/keys: %v", h, err)
		}
		res, body := servertest.Do(t, "POST", srv.URL+"/api/copy", `{"source":"m1","destination":"m9"}`, h...)
		if res.StatusCode != 403 || !strings.Contains(string(body), "web pages") {
			t.Fatalf("%v: POST /api/copy: %d %s", h, res.StatusCode, body)
		}
	}
	stored, err := cat.Store.Keys(ctx, true)
	if err != nil || len(stored) != 0 || keys.HasKeys() {
		t.Fatalf("a refused request made a key: %+v %v", stored, err)
	}
	m1, err := cat.Mgr.Catalog().Lookup("m1")
	if err != nil {
		t.Fatal(err)
	}
	if r := cat.Runner(m1.Path); r != nil && r.Loaded() {
		t.Fatal("a refused request loaded the model")
	}
	if _, err := cat.Mgr.Catalog().Lookup("m9"); err == nil {
		t.Fatal("a refused copy happened")
	}
	// A program on this machine (no Origin, no Sec-Fetch-Site) is still admin without keys.
	var created struct{ Key string }
	if err := page().Post(ctx, "keys", map[string]any{"name": "mine", "admin": true}, &created); err != nil || !strings.HasPrefix(created.Key, auth.KeyPrefix) {
		t.Fatalf("POST /v1/keys from this machine: %v %+v", err, created)
	}
}

// TestLoopbackAdminNotForProxiedClients: without keys, a client that reaches the server
// through a reverse proxy on this machine (here net/http/httputil's, which adds
// X-Forwarded-For) arrives from 127.0.0.1 but is not admin, --trusted-proxies or not: its
// POST /v1/keys gets 403 admin_required and makes no key.
func TestLoopbackAdminNotForProxiedClients(t *testing.T) {
	ctx := context.Background()
	cat := servertest.NewCatalog(t, models.Config{})
	keys, err := auth.New(ctx, auth.Config{Store: cat.Store})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Config{Keys: keys, Bind: server.NewBind("127.0.0.1")}, cat.Svc))
	t.Cleanup(srv.Close)
	target, _ := url.Parse(srv.URL)
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
	t.Cleanup(proxy.Close)
	c := openai.NewClient(option.WithBaseURL(proxy.URL+"/v1"), option.WithMaxRetries(0))
	var e *openai.Error
	var created map[string]any
	err = c.Post(ctx, "keys", map[string]any{"name": "stolen", "admin": true}, &created)
	if !errors.As(err, &e) || e.StatusCode != 403 || e.Code != "admin_required" || !strings.Contains(e.Message, "reverse proxy") {
		t.Fatalf("POST /v1/keys through a proxy: %v %v", err, created)
	}
	if stored, err := cat.Store.Keys(ctx, true); err != nil || len(stored) != 0 || keys.HasKeys() {
		t.Fatalf("a refused request made a key: %+v %v", stored, err)
	}
	// Requests that are not model management still pass through the proxy.
	if _, err := c.Models.List(ctx); err != nil {
		t.Fatalf("GET /v1/models through a proxy: %v", err)
	}
}
