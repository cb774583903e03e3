package openai_test

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestPropsOmitsUnknownDefaults: a model another server runs (a request engine: the server
// forwards what a request names and nothing else) applies its own defaults to what a request
// leaves unset, which this server does not know. /props default_generation_settings leaves
// those out instead of inventing llama.cpp's; what the server's flags decide (--max-tokens) is
// there, and a request that names nothing indeed reaches the engine with only that set.
func TestPropsOmitsUnknownDefaults(t *testing.T) {
	unknown := []string{"temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed", "repeat_last_n",
		"presence_penalty", "frequency_penalty"}
	for _, tc := range []struct {
		name      string
		maxTokens int
	}{{"no --max-tokens", 0}, {"--max-tokens 7", 7}} {
		t.Run(tc.name, func(t *testing.T) {
			echo := &servertest.Echo{}
			svc := core.New(core.Config{MaxTokens: tc.maxTokens}, nil, servertest.EchoModel("up", echo))
			srv := httptest.NewServer(server.New(server.Config{}, svc))
			defer srv.Close()
			var props struct {
				Settings struct {
					Params map[string]any `json:"params"`
				} `json:"default_generation_settings"`
			}
			res, b := servertest.Do(t, "GET", srv.URL+"/props?model=up", "")
			if err := json.Unmarshal(b, &props); err != nil || res.StatusCode != 200 {
				t.Fatalf("/props: %d %s (%v)", res.StatusCode, b, err)
			}
			p := props.Settings.Params
			for _, name := range unknown {
				if v, ok := p[name]; ok {
					t.Errorf("default_generation_settings.params.%s = %v: a default the server does not know, invented", name, v)
				}
			}
			if tc.maxTokens == 0 {
				if v, ok := p["max_tokens"]; ok {
					t.Errorf("max_tokens = %v without --max-tokens: the engine's own cap, invented", v)
				}
			} else if p["max_tokens"] != float64(tc.maxTokens) || p["n_predict"] != float64(tc.maxTokens) {
				t.Errorf("max_tokens %v, n_predict %v; want --max-tokens %d", p["max_tokens"], p["n_predict"], tc.maxTokens)
			}
			// What a request naming nothing reaches the engine with: nothing /props left out.
			res, b = servertest.Do(t, "POST", srv.URL+"/v1/chat/completions", `{"model":"up","messages":[{"role":"user","content":"hi"}]}`)
			if res.StatusCode != 200 {
				t.Fatalf("chat: %d %s", res.StatusCode, b)
			}
			chats := echo.Chats()
			if len(chats) != 1 {
				t.Fatalf("the engine saw %d chats", len(chats))
			}
			gen := chats[0].Generation
			sm := gen.Sampling
			if sm.Temperature != nil || sm.TopP != nil || sm.TopK != nil || sm.MinP != nil || sm.RepeatPenalty != nil || sm.Seed != 0 ||
				sm.PresencePenalty != 0 || sm.FrequencyPenalty != 0 || gen.MaxTokens != tc.maxTokens {
				t.Fatalf("a request naming nothing reached the engine with sampling %s, max_tokens %d; want none set but --max-tokens %d",
					asJSON(sm), gen.MaxTokens, tc.maxTokens)
			}
			keys := make([]string, 0, len(p))
			for k := range p {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			t.Logf("params: %v", keys)
		})
	}
}
