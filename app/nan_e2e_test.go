package app

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestNaNModelFailsCleanly: a model whose logits are all NaN answers every generation with a
// 500 that says the model produced no finite logit, with and without a grammar
// (response_format json_object, Ollama's format json), in each dialect; its worker stays up;
// the clients' retries are never refused as a quarantined prompt; and the good model on the
// same server answers afterwards.
func TestNaNModelFailsCleanly(t *testing.T) {
	cfg := testConfig(t, testModel)
	a, srv := startServer(t, cfg, true)
	e, err := a.Manager().Catalog().AddLocal(context.Background(), writeNaNModel(t), "")
	if err != nil {
		t.Fatal(err)
	}
	nan := e.ID
	msgs := `"messages":[{"role":"user","content":"Once upon a time"}]`
	cases := []struct{ name, path, body string }{
		{"OpenAI chat", "/v1/chat/completions", `{"model":"` + nan + `","max_tokens":8,` + msgs + `}`},
		// Greedy: the grammar then asks about the single best candidate, of none (the panic).
		{"OpenAI chat json_object", "/v1/chat/completions", `{"model":"` + nan + `","max_tokens":8,"temperature":0,"response_format":{"type":"json_object"},` + msgs + `}`},
		{"OpenAI chat stream", "/v1/chat/completions", `{"model":"` + nan + `","max_tokens":8,"stream":true,` + msgs + `}`},
		{"Anthropic messages", "/v1/messages", `{"model":"` + nan + `","max_tokens":8,` + msgs + `}`},
		{"Ollama chat format json", "/api/chat", `{"model":"` + nan + `","stream":false,"format":"json","options":{"temperature":0},` + msgs + `}`},
		{"Responses", "/v1/responses", `{"model":"` + nan + `","max_output_tokens":16,"input":"Once upon a time"}`},
	}
	pid := 0
	for _, c := range cases {
		for try := range 3 { // an SDK's retries of a 500
			status, _, b := post(t, srv.URL+c.path, c.body)
			body := string(b)
			// A stream may have begun (200) before the first token failed: the error is then
			// its last event.
			if status != http.StatusInternalServerError && !(status == http.StatusOK && strings.Contains(c.name, "stream")) ||
				!strings.Contains(body, "no finite logit") || strings.Contains(body, "quarantine") {
				t.Errorf("%s, try %d: %d %.400s; want a 500 saying the model produced no finite logit", c.name, try+1, status, body)
			}
		}
		if now := a.workerPID(t, nan); pid != 0 && now != pid {
			t.Errorf("%s: the NaN model's worker was replaced (pid %d, was %d)", c.name, now, pid)
		} else {
			pid = now
		}
	}
	if chatOnce(t, srv.URL, modelID(testModel)) == "" {
		t.Error("the good model said nothing after the NaN model's failures")
	}
}
