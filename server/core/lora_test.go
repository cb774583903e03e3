package core_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// loraCatalog is a catalog of two tiny llamas (alpha, beta; width 64) over fake workers, and
// the folder the test writes adapters into.
func loraCatalog(t *testing.T) (*servertest.Catalog, string) {
	t.Helper()
	cat := servertest.NewCatalog(t, models.Config{KeepAlive: time.Hour})
	cat.AddModel(t, "alpha", gguftest.TinyLlamaOptions{})
	cat.AddModel(t, "beta", gguftest.TinyLlamaOptions{Seed: 2})
	return cat, t.TempDir()
}

var chatSeq atomic.Int64 // request ids, unique in each test's store

// loraChat runs one chat turn on model with the request's adapters and returns what the fake
// worker was asked to run.
func loraChat(t *testing.T, cat *servertest.Catalog, model string, adapters []llm.AdapterRef) (llm.Request, error) {
	t.Helper()
	req := &core.ChatRequest{ID: fmt.Sprintf("chatcmpl-lora-%d", chatSeq.Add(1)), Model: model, Messages: []chat.Message{{Role: "user", Content: "hi"}}}
	req.Generation.MaxTokens = 4
	req.Generation.Adapters = adapters
	if _, err := cat.Svc.Chat(t.Context(), req, func(int, llm.Event) error { return nil }); err != nil {
		return llm.Request{}, err
	}
	e, err := cat.Mgr.Catalog().Lookup(model)
	if err != nil {
		t.Fatal(err)
	}
	seen := cat.Runner(e.Path).Requests()
	return seen[len(seen)-1], nil
}

// TestLoRARegistryResolvesEachRequest: a loaded adapter runs with every request of its model
// that names none (path and scale filled in), never with another model's; a request naming
// adapters runs with exactly those (scale its own, [] none); unloading stops the default and
// asks the loaded worker to free the file.
func TestLoRARegistryResolvesEachRequest(t *testing.T) {
	cat, dir := loraCatalog(t)
	ctx := t.Context()
	path := filepath.Join(dir, "style.gguf")
	servertest.WriteLoRAHeader(t, path, "llama", 64, 2)

	a, err := cat.Svc.LoadAdapter(ctx, "alpha", path, "", 0.75)
	if err != nil {
		t.Fatal(err)
	}
	if a != (core.Adapter{ID: "style", Model: "alpha", Path: path, Scale: 0.75, Active: true}) {
		t.Fatalf("loaded: %+v", a)
	}
	got, err := loraChat(t, cat, "alpha", nil)
	if err != nil || !slices.Equal(got.Adapters, []llm.AdapterRef{{ID: "style", Path: path, Scale: 0.75}}) {
		t.Fatalf("a request naming no adapters ran with %+v (%v); want the loaded one", got.Adapters, err)
	}
	if got, err := loraChat(t, cat, "beta", nil); err != nil || len(got.Adapters) != 0 {
		t.Fatalf("beta ran with %+v (%v); the adapter was loaded for alpha", got.Adapters, err)
	}
	got, err = loraChat(t, cat, "alpha", []llm.AdapterRef{{ID: "style", Scale: -2}})
	if err != nil || !slices.Equal(got.Adapters, []llm.AdapterRef{{ID: "style", Path: path, Scale: -2}}) {
		t.Fatalf("named with scale -2: %+v (%v)", got.Adapters, err)
	}
	got, err = loraChat(t, cat, "alpha", []llm.AdapterRef{})
	if err != nil || got.Adapters == nil || len(got.Adapters) != 0 {
		t.Fatalf("lora [] ran with %#v (%v); want none", got.Adapters, err)
	}
	if got, err := loraChat(t, cat, "alpha", []llm.AdapterRef{{ID: "style", Scale: 0}}); err != nil || len(got.Adapters) != 0 {
		t.Fatalf("scale 0 ran with %+v (%v); an adapter at 0 changes nothing and is left out", got.Adapters, err)
	}

	list, err := cat.Svc.Adapters(ctx, "alpha")
	if err != nil || len(list) != 1 || list[0] != a {
		t.Fatalf("Adapters(alpha): %+v %v", list, err)
	}
	if all, err := cat.Svc.Adapters(ctx, ""); err != nil || len(all) != 1 || all[0] != a {
		t.Fatalf("Adapters(): %+v %v", all, err)
	}

	gone, err := cat.Svc.UnloadAdapter(ctx, "alpha", "style")
	if err != nil || len(gone) != 1 || gone[0].ID != "style" || gone[0].Active {
		t.Fatalf("unload: %+v %v", gone, err)
	}
	e, _ := cat.Mgr.Catalog().Lookup("alpha")
	if released := cat.Runner(e.Path).Released(); !slices.Equal(released, []string{path}) {
		t.Fatalf("the loaded worker was asked to free %v; want [%s]", released, path)
	}
	if got, err := loraChat(t, cat, "alpha", nil); err != nil || len(got.Adapters) != 0 {
		t.Fatalf("after unload a request ran with %+v (%v)", got.Adapters, err)
	}
	if _, err := loraChat(t, cat, "alpha", []llm.AdapterRef{{ID: "style", Scale: 1}}); !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), `"style"`) {
		t.Fatalf("naming an unloaded adapter: %v; want a 400 naming it", err)
	}
	if _, err := cat.Svc.UnloadAdapter(ctx, "alpha", "style"); !errors.Is(err, llm.ErrInvalidInput) {
		t.Fatalf("unloading it twice: %v", err)
	}

	// The records say what each request ran with (ids and scales, not paths), in order.
	if err := cat.Store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs, err := cat.Store.RecentRequests(ctx, 20)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, r := range slices.Backward(recs) {
		if r.Status == 200 {
			ran = append(ran, r.Adapters)
		}
	}
	want := []string{`[{"id":"style","scale":0.75}]`, "", `[{"id":"style","scale":-2}]`, "", "", ""}
	if !slices.Equal(ran, want) {
		t.Fatalf("the records' adapters: %q, want %q", ran, want)
	}
}

// TestLoRARequestRefusals: what a request's lora may not name, each a 400 saying why.
func TestLoRARequestRefusals(t *testing.T) {
	cat, dir := loraCatalog(t)
	path := filepath.Join(dir, "a.gguf")
	servertest.WriteLoRAHeader(t, path, "llama", 64, 2)
	if _, err := cat.Svc.LoadAdapter(t.Context(), "alpha", path, "a", 1); err != nil {
		t.Fatal(err)
	}
	many := make([]llm.AdapterRef, 9)
	for i := range many {
		many[i] = llm.AdapterRef{ID: "a", Scale: 1}
	}
	for _, tt := range []struct {
		name     string
		adapters []llm.AdapterRef
		want     string
	}{
		{"unknown id", []llm.AdapterRef{{ID: "nope", Scale: 1}}, `no adapter "nope"`},
		{"no id", []llm.AdapterRef{{Scale: 1}}, "has no id"},
		{"NaN scale", []llm.AdapterRef{{ID: "a", Scale: math.NaN()}}, "lora[0].scale is NaN"},
		{"infinite scale", []llm.AdapterRef{{ID: "a", Scale: math.Inf(1)}}, "lora[0].scale is +Inf"},
		{"scale past 100", []llm.AdapterRef{{ID: "a", Scale: -100.5}}, "from -100 to 100"},
		{"twice", []llm.AdapterRef{{ID: "a", Scale: 1}, {ID: "a", Scale: 2}}, `lora[1] names the adapter "a" twice`},
		{"too many", many, "at most 8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loraChat(t, cat, "alpha", tt.adapters)
			if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v; want a 400 saying %q", err, tt.want)
			}
		})
	}
	if _, err := loraChat(t, cat, "beta", []llm.AdapterRef{{ID: "a", Scale: 1}}); !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "beta") {
		t.Fatalf("alpha's adapter named on beta: %v", err)
	}
}

// TestLoRALoadChecksTheFile: /v1/lora/load's file must be an absolute path to an existing
// regular .gguf LoRA adapter that fits the model; each refusal is a 400 naming what is wrong,
// and for another model's adapter, both files.
func TestLoRALoadChecksTheFile(t *testing.T) {
	cat, dir := loraCatalog(t)
	write := func(name string, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	wide := filepath.Join(dir, "wide.gguf")
	servertest.WriteLoRAHeader(t, wide, "llama", 128, 2)
	other := filepath.Join(dir, "other-arch.gguf")
	servertest.WriteLoRAHeader(t, other, "qwen2", 64, 2)
	deep := filepath.Join(dir, "deep.gguf")
	servertest.WriteLoRAHeader(t, deep, "llama", 64, 4)
	model := filepath.Join(dir, "model.gguf")
	if err := gguftest.WriteTinyLlama(model, gguftest.TinyLlamaOptions{}); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "folder.gguf")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := write("secret.gguf", "password=hunter2\n")
	alpha, _ := cat.Mgr.Catalog().Lookup("alpha")
	for _, tt := range []struct {
		name, ref string
		scale     float64
		want      []string
	}{
		{"relative", "adapters/a.gguf", 1, []string{"relative path"}},
		{"dot relative", "./a.gguf", 1, []string{"relative path"}},
		{"missing", filepath.Join(dir, "none.gguf"), 1, []string{"does not exist"}},
		{"a directory", sub, 1, []string{"not a regular file"}},
		{"not .gguf", write("a.bin", "x"), 1, []string{"not a .gguf file"}},
		{"not GGUF", secret, 1, []string{secret, "not a readable GGUF file"}},
		{"a model", model, 1, []string{model, alpha.Path, "not a LoRA adapter", `general.type is "model"`}},
		{"another width", wide, 1, []string{wide, alpha.Path, "blk.0.attn_q.weight", "[128 128]", "[64 64]"}},
		{"another architecture", other, 1, []string{other, alpha.Path, "for qwen2 models but the model is llama"}},
		{"more blocks", deep, 1, []string{deep, alpha.Path, "blk.2.attn_q.weight", "which the model lacks"}},
		{"unknown name", "no-such-adapter", 1, []string{"neither an absolute path nor a catalog adapter"}},
		{"a catalog model", "beta", 1, []string{`"beta" is a model, not a LoRA adapter`}},
		{"NaN scale", wide, math.NaN(), []string{"scale is NaN"}},
		{"scale past 100", wide, 101, []string{"from -100 to 100"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cat.Svc.LoadAdapter(t.Context(), "alpha", tt.ref, "", tt.scale)
			if !errors.Is(err, llm.ErrInvalidInput) {
				t.Fatalf("got %v; want a 400", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			t.Log(err)
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the message echoes the file: %q", err)
			}
		})
	}
	if list, _ := cat.Svc.Adapters(t.Context(), "alpha"); len(list) != 0 {
		t.Fatalf("refused loads left %+v", list)
	}
	// The same file under a second id would apply it twice.
	ok := filepath.Join(dir, "ok.gguf")
	servertest.WriteLoRAHeader(t, ok, "llama", 64, 2)
	if _, err := cat.Svc.LoadAdapter(t.Context(), "alpha", ok, "one", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Svc.LoadAdapter(t.Context(), "alpha", ok, "two", 1); !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), `as the adapter "one"`) {
		t.Fatalf("the same file under another id: %v", err)
	}
	// The same id again replaces it (a new scale).
	if a, err := cat.Svc.LoadAdapter(t.Context(), "alpha", ok, "one", 0.5); err != nil || a.Scale != 0.5 {
		t.Fatalf("reload at 0.5: %+v %v", a, err)
	}
	if list, _ := cat.Svc.Adapters(t.Context(), "alpha"); len(list) != 1 || list[0].Scale != 0.5 {
		t.Fatalf("after the reload: %+v", list)
	}
}

// TestLoRACatalogAdapters: a catalog adapter of a model (Record.Kind adapter, BaseModel) is
// listed inactive until loaded, runs when a request names it without being loaded (its path
// filled in), loads by its catalog id (the id it goes by), and is refused for another model.
func TestLoRACatalogAdapters(t *testing.T) {
	cat, dir := loraCatalog(t)
	ctx := t.Context()
	path := filepath.Join(dir, "tone.gguf")
	servertest.WriteLoRAHeader(t, path, "llama", 64, 2)
	if _, err := cat.Mgr.Catalog().Register(ctx, models.Record{ID: "tone-lora", Path: path, Source: models.SourceLocal,
		Kind: models.KindAdapter, BaseModel: "alpha"}); err != nil {
		t.Fatal(err)
	}
	list, err := cat.Svc.Adapters(ctx, "alpha")
	if err != nil || len(list) != 1 || list[0] != (core.Adapter{ID: "tone-lora", Model: "alpha", Path: path, Scale: 1}) {
		t.Fatalf("alpha's adapters before any load: %+v %v; want the catalog one, inactive", list, err)
	}
	if got, err := loraChat(t, cat, "alpha", nil); err != nil || len(got.Adapters) != 0 {
		t.Fatalf("an unloaded catalog adapter ran by default: %+v %v", got.Adapters, err)
	}
	got, err := loraChat(t, cat, "alpha", []llm.AdapterRef{{ID: "tone-lora", Scale: 1}})
	if err != nil || !slices.Equal(got.Adapters, []llm.AdapterRef{{ID: "tone-lora", Path: path, Scale: 1}}) {
		t.Fatalf("named per request: %+v %v", got.Adapters, err)
	}
	if _, err := loraChat(t, cat, "beta", []llm.AdapterRef{{ID: "tone-lora", Scale: 1}}); !errors.Is(err, llm.ErrInvalidInput) {
		t.Fatalf("alpha's catalog adapter named on beta: %v", err)
	}
	if _, err := cat.Svc.LoadAdapter(ctx, "beta", "tone-lora", "", 1); !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "adapter of the model alpha, not of beta") {
		t.Fatalf("loading alpha's catalog adapter on beta: %v", err)
	}
	a, err := cat.Svc.LoadAdapter(ctx, "alpha", "tone-lora", "", 2)
	if err != nil || a != (core.Adapter{ID: "tone-lora", Model: "alpha", Path: path, Scale: 2, Active: true}) {
		t.Fatalf("load by catalog id: %+v %v", a, err)
	}
	if list, _ := cat.Svc.Adapters(ctx, "alpha"); len(list) != 1 || !list[0].Active {
		t.Fatalf("once loaded it is listed once, active: %+v", list)
	}
}

// TestLoRAForgetsAReplacedModel: adapters loaded for a model id are dropped, never applied,
// once the id names another file (the model deleted and another added under its name).
func TestLoRAForgetsAReplacedModel(t *testing.T) {
	cat, dir := loraCatalog(t)
	ctx := t.Context()
	path := filepath.Join(dir, "a.gguf")
	servertest.WriteLoRAHeader(t, path, "llama", 64, 2)
	if _, err := cat.Svc.LoadAdapter(ctx, "alpha", path, "", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Svc.DeleteModel(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	cat.AddModel(t, "alpha", gguftest.TinyLlamaOptions{Embd: 128}) // the same name and path, another model
	got, err := loraChat(t, cat, "alpha", nil)
	if err != nil || len(got.Adapters) != 0 {
		t.Fatalf("the new alpha ran with %+v (%v); the adapter was checked against the old one", got.Adapters, err)
	}
	if list, _ := cat.Svc.Adapters(ctx, "alpha"); len(list) != 0 {
		t.Fatalf("the new alpha lists %+v", list)
	}
}
