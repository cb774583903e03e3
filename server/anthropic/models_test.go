package anthropic_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// setupModels serves a catalog of three models over fake workers; "long" was trained for 64k
// tokens and its settings serve 32k.
func setupModels(t *testing.T) *fixture {
	t.Helper()
	cat := servertest.NewCatalog(t, models.Config{KeepAlive: time.Hour})
	for i, id := range []string{"alpha", "beta", "long"} {
		cat.AddModel(t, id, gguftest.TinyLlamaOptions{Seed: int64(i), ContextLength: 65536})
	}
	if err := cat.Svc.SetModelSettings(t.Context(), store.ModelSettings{ModelID: "long", ContextLength: 32768}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Config{}, cat.Svc))
	t.Cleanup(srv.Close)
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("x"), option.WithMaxRetries(0))
	return &fixture{srv: srv, st: cat.Store, client: client}
}

// TestModelList: an Anthropic client (anthropic-version) gets /v1/models in Anthropic's shape,
// with the window each model serves with as max_input_tokens and max_tokens, paged by limit,
// after_id and before_id; one model by id; an unknown one is a 404 in Anthropic's error shape.
// A request without the header still gets OpenAI's list.
func TestModelList(t *testing.T) {
	f := setupModels(t)
	page, err := f.client.Models.List(t.Context(), anthropic.ModelListParams{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		if m.Type != "model" || m.DisplayName != m.ID || m.CreatedAt.IsZero() || m.MaxTokens != m.MaxInputTokens {
			t.Errorf("model %+v", m)
		}
	}
	if !slices.Equal(ids, []string{"alpha", "beta", "long"}) || page.HasMore || page.FirstID != "alpha" || page.LastID != "long" {
		t.Fatalf("list %v, has_more %v, first %q, last %q", ids, page.HasMore, page.FirstID, page.LastID)
	}
	// alpha's window is the default (the model's, at most 4096); long's its settings'.
	if page.Data[0].MaxInputTokens != 4096 || page.Data[2].MaxInputTokens != 32768 {
		t.Errorf("max_input_tokens %d and %d, want 4096 and 32768", page.Data[0].MaxInputTokens, page.Data[2].MaxInputTokens)
	}
	if c := page.Data[0].Capabilities; !c.StructuredOutputs.Supported || c.ImageInput.Supported || !c.Thinking.Types.Disabled.Supported {
		t.Errorf("capabilities %+v", c)
	}

	// The SDK's pager walks pages of one with after_id.
	pager := f.client.Models.ListAutoPaging(t.Context(), anthropic.ModelListParams{Limit: anthropic.Int(1)})
	ids = nil
	for pager.Next() {
		ids = append(ids, pager.Current().ID)
	}
	if err := pager.Err(); err != nil || !slices.Equal(ids, []string{"alpha", "beta", "long"}) {
		t.Errorf("auto-paging by one: %v %v", ids, err)
	}
	back, err := f.client.Models.List(t.Context(), anthropic.ModelListParams{Limit: anthropic.Int(1), BeforeID: anthropic.String("long")})
	if err != nil || len(back.Data) != 1 || back.Data[0].ID != "beta" || !back.HasMore {
		t.Errorf("before_id long, limit 1: %+v %v", back, err)
	}

	m, err := f.client.Models.Get(t.Context(), "long", anthropic.ModelGetParams{})
	if err != nil || m.ID != "long" || m.MaxInputTokens != 32768 || m.MaxTokens != 32768 {
		t.Errorf("get long: %+v %v", m, err)
	}
	_, err = f.client.Models.Get(t.Context(), "nope", anthropic.ModelGetParams{})
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Errorf("get an unknown model: %v", err)
	}
	resp, b := f.do(t, http.MethodGet, "/v1/models/nope", "")
	checkError(t, resp, b, wantError{404, "not_found_error", "not in the catalog"})
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "after_id=nope", "before_id=nope"} {
		resp, b := f.do(t, http.MethodGet, "/v1/models?"+q, "")
		checkError(t, resp, b, wantError{400, "invalid_request_error", ""})
	}

	// Without anthropic-version: OpenAI's list, whatever the key header.
	resp, b = servertest.Do(t, http.MethodGet, f.srv.URL+"/v1/models", "", "x-api-key", "x")
	var openaiList struct {
		Object string `json:"object"`
		Data   []struct {
			Object        string `json:"object"`
			ContextLength int    `json:"context_length"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &openaiList); err != nil || resp.StatusCode != 200 || openaiList.Object != "list" || len(openaiList.Data) != 3 ||
		openaiList.Data[2].Object != "model" || openaiList.Data[2].ContextLength != 32768 {
		t.Errorf("without anthropic-version: %d %s", resp.StatusCode, b)
	}
}
