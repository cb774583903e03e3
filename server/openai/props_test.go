package openai_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
)

// lazyEngine is the fake with a load step, like a worker that starts on demand.
type lazyEngine struct {
	*enginetest.Engine
	loaded atomic.Bool
}

func (e *lazyEngine) Start(context.Context) error { e.loaded.Store(true); return nil }
func (e *lazyEngine) Loaded() bool                { return e.loaded.Load() }

// TestPropsAutoload: /props describes a model that is not loaded yet, and ?autoload=1 loads it
// first.
func TestPropsAutoload(t *testing.T) {
	tmpl, _ := chat.Parse("")
	eng := &lazyEngine{Engine: enginetest.New(256, "x")}
	svc := core.New(core.Config{}, nil, &core.Model{ID: "lazy", Path: "/m/lazy.gguf", Engine: eng, Template: tmpl, ContextLength: 256})
	srv := httptest.NewServer(server.New(server.Config{}, svc))
	defer srv.Close()
	get := func(q string) map[string]any {
		res, err := srv.Client().Get(srv.URL + "/props" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var props map[string]any
		if err := json.NewDecoder(res.Body).Decode(&props); err != nil || res.StatusCode != 200 {
			t.Fatalf("/props%s: %d %v", q, res.StatusCode, err)
		}
		return props
	}
	if p := get(""); p["loaded"] != false || p["model"] != "lazy" {
		t.Fatalf("before loading: %v", p)
	}
	if p := get("?autoload=1"); p["loaded"] != true || !eng.Loaded() {
		t.Fatalf("after autoload: %v", p)
	}
}
