package openai_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
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

// sharedModels holds the real llama.cpp GGUF files, when this checkout has them.
const sharedModels = "../../../shared/models"

// TestFIMCapability: capabilities.dialect.fim says whether the model has fill-in-the-middle
// tokens, read from the GGUF: the deepseek-coder vocabulary has them, stories260K does not.
func TestFIMCapability(t *testing.T) {
	tmpl, _ := chat.Parse("")
	var served []*core.Model
	for _, file := range []string{"ggml-vocab-deepseek-coder-6.7b-instruct.gguf", "stories260K.gguf"} {
		path := filepath.Join(sharedModels, file)
		if _, err := os.Stat(path); err != nil {
			t.Skipf("no %s: %v", path, err)
		}
		m := core.DescribeModel(strings.TrimSuffix(file, ".gguf"), path, 256)
		m.Engine, m.Template = enginetest.New(256, "x"), tmpl
		served = append(served, m)
	}
	srv := httptest.NewServer(server.New(server.Config{}, core.New(core.Config{}, nil, served...)))
	defer srv.Close()
	want := map[string]bool{"ggml-vocab-deepseek-coder-6.7b-instruct": true, "stories260K": false}
	var list struct {
		Data []struct {
			ID           string
			Capabilities struct {
				Dialect struct{ FIM bool } `json:"dialect"`
			} `json:"capabilities"`
		} `json:"data"`
	}
	_, b := servertest.Do(t, "GET", srv.URL+"/v1/models", "")
	if err := json.Unmarshal(b, &list); err != nil || len(list.Data) != 2 {
		t.Fatalf("/v1/models: %s (%v)", b, err)
	}
	for _, e := range list.Data {
		if e.Capabilities.Dialect.FIM != want[e.ID] {
			t.Errorf("/v1/models %s: fim %v, want %v", e.ID, e.Capabilities.Dialect.FIM, want[e.ID])
		}
		var props struct {
			Capabilities struct {
				Dialect struct{ FIM bool } `json:"dialect"`
			} `json:"capabilities"`
		}
		_, b := servertest.Do(t, "GET", srv.URL+"/props?model="+e.ID, "")
		if err := json.Unmarshal(b, &props); err != nil || props.Capabilities.Dialect.FIM != want[e.ID] {
			t.Errorf("/props?model=%s: %s (%v), want fim %v", e.ID, b, err, want[e.ID])
		}
	}
}

// TestPropsDefaultsAreTheModelsSettings: default_generation_settings is what a request that
// names nothing runs with: the model's own settings where it has them (here temperature,
// top_k and max tokens), the server's defaults for the rest; and a request naming nothing does
// run with exactly those.
func TestPropsDefaultsAreTheModelsSettings(t *testing.T) {
	cat := servertest.NewCatalog(t, models.Config{})
	e := cat.AddModel(t, "m1", gguftest.TinyLlamaOptions{})
	cat.AddModel(t, "m2", gguftest.TinyLlamaOptions{Seed: 2})
	temp, topK := 0.25, 7
	if err := cat.Svc.SetModelSettings(t.Context(), store.ModelSettings{ModelID: "m1", Temperature: &temp, TopK: &topK, MaxTokens: 9}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Config{}, cat.Svc))
	defer srv.Close()
	type params struct {
		Temperature *float64 `json:"temperature"`
		TopP        *float64 `json:"top_p"`
		TopK        *int     `json:"top_k"`
		MinP        *float64 `json:"min_p"`
		MaxTokens   *int     `json:"max_tokens"`
		NPredict    *int     `json:"n_predict"`
	}
	get := func(model string) params {
		var props struct {
			Settings struct {
				Params params `json:"params"`
			} `json:"default_generation_settings"`
		}
		res, b := servertest.Do(t, "GET", srv.URL+"/props?model="+model, "")
		if err := json.Unmarshal(b, &props); err != nil || res.StatusCode != 200 {
			t.Fatalf("/props?model=%s: %d %s (%v)", model, res.StatusCode, b, err)
		}
		return props.Settings.Params
	}
	p := get("m1")
	if p.Temperature == nil || *p.Temperature != temp || p.TopK == nil || *p.TopK != topK || p.MaxTokens == nil || *p.MaxTokens != 9 ||
		p.NPredict == nil || *p.NPredict != 9 || p.TopP == nil || *p.TopP != llm.DefaultTopP || p.MinP == nil || *p.MinP != llm.DefaultMinP {
		t.Fatalf("m1's defaults: %s", asJSON(p))
	}
	if q := get("m2"); q.Temperature == nil || *q.Temperature != llm.DefaultTemperature || q.TopK == nil || *q.TopK != llm.DefaultTopK ||
		q.MaxTokens == nil || *q.MaxTokens != -1 {
		t.Fatalf("m2 (no settings) defaults: %s", asJSON(q))
	}
	// What a request naming nothing runs with on m1.
	res, b := servertest.Do(t, "POST", srv.URL+"/v1/chat/completions", `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`)
	if res.StatusCode != 200 {
		t.Fatalf("chat: %d %s", res.StatusCode, b)
	}
	reqs := cat.Runner(e.Path).Requests()
	if len(reqs) == 0 {
		t.Fatal("the worker saw no request")
	}
	got := reqs[len(reqs)-1]
	sm := got.Sampling
	if got.MaxTokens != *p.MaxTokens || sm.Temperature == nil || *sm.Temperature != *p.Temperature || sm.TopK == nil || *sm.TopK != *p.TopK {
		t.Errorf("the request ran with max_tokens %d, sampling %s; /props said %s", got.MaxTokens, asJSON(sm), asJSON(p))
	}
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
