package ollama_test

import (
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"
)

func TestRootAndVersion(t *testing.T) {
	f := setup(t, config{})
	if err := f.client.Heartbeat(t.Context()); err != nil {
		t.Fatalf("heartbeat (HEAD /): %v", err)
	}
	resp, b := f.do(t, http.MethodGet, "/", "")
	if resp.StatusCode != http.StatusOK || string(b) != "Ollama is running" {
		t.Errorf("GET /: %d %q", resp.StatusCode, b)
	}
	v, err := f.client.Version(t.Context())
	if err != nil || v != "0.24.0" {
		t.Errorf("version %q, %v", v, err)
	}
}

func TestList(t *testing.T) {
	f := setup(t, config{})
	list, err := f.client.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Models) != 1 {
		t.Fatalf("models: %+v", list.Models)
	}
	m := list.Models[0]
	if m.Name != "fake:latest" || m.Model != "fake:latest" || m.Size != f.model.Size || !m.ModifiedAt.Equal(f.model.Created) {
		t.Errorf("entry %+v", m)
	}
	if d, err := hex.DecodeString(m.Digest); err != nil || len(d) != 32 {
		t.Errorf("digest %q is not a SHA-256 in hex", m.Digest)
	}
	d := m.Details
	if d.Format != "gguf" || d.Family != "llama" || !slices.Equal(d.Families, []string{"llama"}) || d.QuantizationLevel != "Q8_0" || d.ParameterSize == "" {
		t.Errorf("details %+v", d)
	}
}

// /api/show answers for every name /api/tags lists, and the other names of the same model.
func TestShow(t *testing.T) {
	f := setup(t, config{})
	list, err := f.client.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.Show(t.Context(), &api.ShowRequest{Model: f.model.Path}); err == nil || !strings.Contains(err.Error(), "is a path") {
		t.Errorf("show by path: %v, want a 400 saying it is a path", err)
	}
	names := []string{"fake"}
	for _, m := range list.Models {
		names = append(names, m.Name)
	}
	for _, name := range names {
		show, err := f.client.Show(t.Context(), &api.ShowRequest{Model: name})
		if err != nil {
			t.Fatalf("show %q: %v", name, err)
		}
		if show.Template != chatML || show.Details.Family != "llama" || show.Details.QuantizationLevel != "Q8_0" || show.Modelfile == "" {
			t.Errorf("show %q: template %q details %+v modelfile %q", name, show.Template, show.Details, show.Modelfile)
		}
		if !slices.Equal(show.Capabilities, []model.Capability{"completion", "tools"}) {
			t.Errorf("capabilities %v", show.Capabilities)
		}
		info := show.ModelInfo
		if info["general.architecture"] != "llama" || info["llama.context_length"] != float64(4096) || info["general.parameter_count"] == nil {
			t.Errorf("model_info %v", info)
		}
		if toks, ok := info["tokenizer.ggml.tokens"].([]any); !ok || len(toks) != 0 {
			t.Errorf("tokenizer.ggml.tokens = %v, want emptied", info["tokenizer.ggml.tokens"])
		}
		if _, ok := info["tokenizer.chat_template"]; ok {
			t.Error("model_info repeats the chat template")
		}
		if len(show.Tensors) == 0 || show.Tensors[0].Type == "" || len(show.Tensors[0].Shape) == 0 {
			t.Errorf("tensors %v", show.Tensors)
		}
	}
	// verbose keeps the token lists; the deprecated "name" still names the model
	show, err := f.client.Show(t.Context(), &api.ShowRequest{Name: "fake:latest", Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	if toks, _ := show.ModelInfo["tokenizer.ggml.tokens"].([]any); len(toks) != 512 {
		t.Errorf("verbose: %d tokens, want 512", len(toks))
	}
	_, err = f.client.Show(t.Context(), &api.ShowRequest{Model: "nope"})
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || se.ErrorMessage != `model "nope" not found, try pulling it first` {
		t.Errorf("unknown model: %#v", err)
	}
}

// A model whose file is gone still shows what the server knows of it.
func TestShowWithoutFile(t *testing.T) {
	f := setup(t, config{})
	f.model.Path = f.model.Path + ".missing"
	show, err := f.client.Show(t.Context(), &api.ShowRequest{Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	if show.Details.Format != "gguf" || show.Details.Family != "llama" || show.ModelInfo["general.architecture"] != "llama" {
		t.Errorf("show %+v", show)
	}
	if _, err := f.client.List(t.Context()); err != nil {
		t.Error(err)
	}
}

func TestTokenize(t *testing.T) {
	f := setup(t, config{})
	for body, want := range map[string]string{
		`{"model":"fake","content":"hi"}`:      `{"model":"fake","tokens":[106,107]}`,
		`{"model":"fake:latest","content":""}`: `{"model":"fake:latest","tokens":[]}`,
		`{"model":"fake","text":"a"}`:          `{"model":"fake","tokens":[99]}`,
	} {
		resp, b := f.do(t, http.MethodPost, "/api/tokenize", body)
		if resp.StatusCode != http.StatusOK || string(b) != want {
			t.Errorf("tokenize %s: %d %s, want %s", body, resp.StatusCode, b, want)
		}
	}
}
