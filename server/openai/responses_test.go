package openai_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// respChatML is a minimal ChatML template: every turn is a prefix of the next conversation's prompt.
const respChatML = `{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

const respReply = "Hello world!"

// respServer is the real router and core over the fake engine and a store at a given path.
type respServer struct {
	url    string
	eng    *enginetest.Engine
	client openai.Client
	close  func()
}

// startResponses serves a store at path; close (also run at cleanup, once) stops the server
// and closes the store, so a test can restart on the same file.
func startResponses(t *testing.T, path string, ctx int, adjust func(*enginetest.Engine)) *respServer {
	t.Helper()
	return startResponsesWith(t, path, respConfig{ctx: ctx, adjust: adjust})
}

// respConfig describes a Responses test server; zero fields take respChatML, respReply and a
// 4096-token window.
type respConfig struct {
	ctx             int
	template, reply string
	adjust          func(*enginetest.Engine)
}

func startResponsesWith(t *testing.T, path string, cfg respConfig) *respServer {
	t.Helper()
	if cfg.ctx == 0 {
		cfg.ctx = 4096
	}
	if cfg.template == "" {
		cfg.template = respChatML
	}
	if cfg.reply == "" {
		cfg.reply = respReply
	}
	st, err := store.Open(path)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	tmpl, err := chat.Parse(cfg.template)
	if err != nil {
		t.Fatal(err)
	}
	eng := enginetest.New(cfg.ctx, cfg.reply)
	if cfg.adjust != nil {
		cfg.adjust(eng)
	}
	svc := core.New(core.Config{}, st, &core.Model{ID: "fake", Path: "/models/fake.gguf", Engine: eng, Template: tmpl, ContextLength: cfg.ctx})
	srv := httptest.NewServer(server.New(server.Config{}, svc))
	closed := false
	s := &respServer{url: srv.URL, eng: eng,
		client: openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))}
	s.close = func() {
		if closed {
			return
		}
		closed = true
		srv.Close()
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	}
	t.Cleanup(s.close)
	return s
}

func newResponsesServer(t *testing.T) *respServer {
	return startResponses(t, filepath.Join(t.TempDir(), "db.sqlite"), 4096, nil)
}

// raw sends a request and returns the status and body.
func (s *respServer) raw(t *testing.T, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func chatMLPrompt(turns ...string) string {
	var sb strings.Builder
	for i := 0; i+1 < len(turns); i += 2 {
		sb.WriteString("<|im_start|>" + turns[i] + "\n" + turns[i+1] + "<|im_end|>\n")
	}
	return sb.String() + "<|im_start|>assistant\n"
}

func text(s string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
}

func TestResponsesCreate(t *testing.T) {
	s := newResponsesServer(t)
	r, err := s.client.Responses.New(t.Context(), responses.ResponseNewParams{
		Model: "fake", Input: text("Say hello."), Instructions: openai.String("Be brief."),
		Temperature: openai.Float(0.5), Metadata: map[string]string{"k": "v"},
	}, option.WithJSONSet("seed", 7)) // an extension, as chat completions take it
	if err != nil {
		t.Fatalf("Responses.New: %v", err)
	}
	if seed := s.eng.Requests()[0].Sampling.Seed; seed != 7 {
		t.Errorf("engine seed %d, want 7", seed)
	}
	if !strings.HasPrefix(r.ID, "resp_") || r.Object != "response" || r.Status != "completed" || r.Model != "fake" {
		t.Errorf("response id %q object %q status %q model %q", r.ID, r.Object, r.Status, r.Model)
	}
	if r.OutputText() != respReply || len(r.Output) != 1 {
		t.Fatalf("output %+v, want one message saying %q", r.Output, respReply)
	}
	msg := r.Output[0].AsMessage()
	if !strings.HasPrefix(msg.ID, "msg_") || msg.Status != "completed" || msg.Role != "assistant" || msg.Content[0].Type != "output_text" {
		t.Errorf("output message %+v", msg)
	}
	prompt := chatMLPrompt("system", "Be brief.", "user", "Say hello.")
	if u := r.Usage; u.InputTokens != int64(len(prompt)+1) || u.OutputTokens != int64(len(respReply)) || u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Errorf("usage %+v", u)
	}
	if r.Instructions.OfString != "Be brief." || r.Temperature != 0.5 || r.Metadata["k"] != "v" {
		t.Errorf("echo: instructions %q temperature %g metadata %v", r.Instructions.OfString, r.Temperature, r.Metadata)
	}
	if got := s.eng.Requests()[0].Prompt; got != prompt {
		t.Errorf("engine prompt %q, want %q", got, prompt)
	}

	// The wire carries every field OpenAI's Response object has, with OpenAI's values.
	_, b := s.raw(t, http.MethodPost, "/v1/responses", `{"model":"fake","input":"hi"}`)
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"error": "null", "incomplete_details": "null", "previous_response_id": "null", "instructions": "null",
		"max_output_tokens": "null", "tools": "[]", "tool_choice": `"auto"`, "text": `{"format":{"type":"text"}}`,
		"truncation": `"disabled"`, "store": "true", "metadata": "{}", "parallel_tool_calls": "true", "object": `"response"`,
	} {
		if got, _ := json.Marshal(obj[key]); string(got) != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	usage, _ := json.Marshal(obj["usage"])
	for _, want := range []string{`"cached_tokens":0`, `"reasoning_tokens":0`, `"total_tokens":`} {
		if !strings.Contains(string(usage), want) {
			t.Errorf("usage %s lacks %s", usage, want)
		}
	}
	content, _ := json.Marshal(obj["output"].([]any)[0].(map[string]any)["content"])
	if want := `[{"annotations":[],"logprobs":[],"text":"Hello world!","type":"output_text"}]`; string(content) != want {
		t.Errorf("output content %s, want %s", content, want)
	}
}

func TestResponsesIncomplete(t *testing.T) {
	s := newResponsesServer(t)
	r, err := s.client.Responses.New(t.Context(), responses.ResponseNewParams{Model: "fake", Input: text("hi"), MaxOutputTokens: openai.Int(5)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" || r.OutputText() != "Hello" || r.MaxOutputTokens != 5 {
		t.Errorf("status %q reason %q text %q max %d", r.Status, r.IncompleteDetails.Reason, r.OutputText(), r.MaxOutputTokens)
	}
	if got := s.eng.Requests()[0].MaxTokens; got != 5 {
		t.Errorf("engine max tokens %d, want 5", got)
	}
}

// TestResponsesTextFormat: text.format becomes the engine's output constraint and is echoed.
func TestResponsesTextFormat(t *testing.T) {
	s := newResponsesServer(t)
	for _, c := range []struct{ format, wantFormat, wantSchema, echo string }{
		{`{"type":"json_schema","name":"x","strict":true,"schema":{"type":"object"}}`, "schema", `{"type":"object"}`,
			`{"type":"json_schema","name":"x","schema":{"type":"object"},"strict":true}`},
		{`{"type":"json_object"}`, "json", "", `{"type":"json_object"}`},
		{`{"type":"text"}`, "", "", `{"type":"text"}`},
	} {
		resp, b := s.raw(t, http.MethodPost, "/v1/responses", `{"model":"fake","input":"hi","text":{"format":`+c.format+`}}`)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", c.format, resp.StatusCode, b)
		}
		reqs := s.eng.Requests()
		if got := reqs[len(reqs)-1]; got.Format != c.wantFormat || string(got.Schema) != c.wantSchema {
			t.Errorf("%s: engine format %q schema %s", c.format, got.Format, got.Schema)
		}
		var obj struct {
			Text struct {
				Format json.RawMessage `json:"format"`
			} `json:"text"`
		}
		if err := json.Unmarshal(b, &obj); err != nil || string(obj.Text.Format) != c.echo {
			t.Errorf("%s: echoed text.format %s, want %s", c.format, obj.Text.Format, c.echo)
		}
	}
}

// streamEvents drives NewStreaming and returns the events.
func streamEvents(t *testing.T, s *respServer, params responses.ResponseNewParams) ([]responses.ResponseStreamEventUnion, error) {
	t.Helper()
	stream := s.client.Responses.NewStreaming(t.Context(), params)
	defer stream.Close()
	var evs []responses.ResponseStreamEventUnion
	for stream.Next() {
		evs = append(evs, stream.Current())
	}
	return evs, stream.Err()
}

func TestResponsesStreaming(t *testing.T) {
	s := newResponsesServer(t)
	for _, tt := range []struct {
		name     string
		max      int64
		terminal string
		want     string
	}{
		{"completed", 0, "response.completed", respReply},
		{"incomplete", 5, "response.incomplete", "Hello"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			params := responses.ResponseNewParams{Model: "fake", Input: text("Say hello.")}
			if tt.max > 0 {
				params.MaxOutputTokens = openai.Int(tt.max)
			}
			evs, err := streamEvents(t, s, params)
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
			for range tt.want {
				want = append(want, "response.output_text.delta")
			}
			want = append(want, "response.output_text.done", "response.content_part.done", "response.output_item.done", tt.terminal)
			var types []string
			var deltas strings.Builder
			for i, ev := range evs {
				types = append(types, ev.Type)
				if ev.SequenceNumber != int64(i) {
					t.Errorf("event %d (%s) has sequence_number %d", i, ev.Type, ev.SequenceNumber)
				}
				if ev.Type == "response.output_text.delta" {
					deltas.WriteString(ev.Delta)
				}
			}
			if !slices.Equal(types, want) {
				t.Fatalf("event types\n got %v\nwant %v", types, want)
			}
			created, last := evs[0].Response, evs[len(evs)-1].Response
			if created.Status != "in_progress" || len(created.Output) != 0 || created.ID != last.ID {
				t.Errorf("created: status %q, %d outputs, id %q (final %q)", created.Status, len(created.Output), created.ID, last.ID)
			}
			itemID := evs[2].Item.ID
			if evs[4].ItemID != itemID || evs[len(evs)-2].Item.ID != itemID || last.Output[0].ID != itemID {
				t.Errorf("item ids differ: added %q, delta %q, done %q, final %q", itemID, evs[4].ItemID, evs[len(evs)-2].Item.ID, last.Output[0].ID)
			}
			if deltas.String() != tt.want || evs[len(evs)-4].Text != tt.want || last.OutputText() != tt.want {
				t.Errorf("deltas %q, done text %q, final %q; want %q", deltas.String(), evs[len(evs)-4].Text, last.OutputText(), tt.want)
			}
			if last.Usage.OutputTokens != int64(len(tt.want)) {
				t.Errorf("final usage %+v", last.Usage)
			}
			got, err := s.client.Responses.Get(t.Context(), last.ID, responses.ResponseGetParams{})
			if err != nil || got.OutputText() != tt.want || got.Status != last.Status {
				t.Errorf("GET after stream: %v, %+v", err, got)
			}
		})
	}

	// The raw framing: named events matching each payload's type, and no [DONE].
	resp, b := s.raw(t, http.MethodPost, "/v1/responses", `{"model":"fake","input":"hi","stream":true}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	for _, frame := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(frame, "\ndata: ")
		var ev struct{ Type string }
		if !ok || json.Unmarshal([]byte(data), &ev) != nil || "event: "+ev.Type != name {
			t.Errorf("frame %q is not `event: T` + `data: {\"type\":T}`", frame)
		}
	}
	if strings.Contains(string(b), "[DONE]") {
		t.Error("a Responses stream carries [DONE]")
	}
}

func TestResponsesStreamFailure(t *testing.T) {
	s := startResponses(t, filepath.Join(t.TempDir(), "db.sqlite"), 4096, func(e *enginetest.Engine) {
		e.Fail, e.FailAfter = errors.New("worker died"), 3
	})
	evs, err := streamEvents(t, s, responses.ResponseNewParams{Model: "fake", Input: text("hi")})
	if err != nil {
		t.Fatalf("stream error %v; want a response.failed event", err)
	}
	last := evs[len(evs)-1]
	if last.Type != "response.failed" || last.Response.Status != "failed" || last.Response.Error.Code != "server_error" ||
		!strings.Contains(last.Response.Error.Message, "worker died") {
		t.Fatalf("last event %s: %+v", last.Type, last.Response.Error)
	}
	if last.Response.OutputText() != "Hel" {
		t.Errorf("failed response output %q, want the partial text", last.Response.OutputText())
	}
	if _, err := s.client.Responses.Get(t.Context(), last.Response.ID, responses.ResponseGetParams{}); !isStatus(err, 404) {
		t.Errorf("GET of a failed response: %v, want 404", err)
	}
}

func isStatus(err error, status int) bool {
	var apiErr *openai.Error
	return errors.As(err, &apiErr) && apiErr.StatusCode == status
}

func TestResponsesGetDeleteInputItems(t *testing.T) {
	s := newResponsesServer(t)
	input := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("Answer in French.", responses.EasyInputMessageRoleDeveloper),
		responses.ResponseInputItemParamOfMessage("Hi", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfMessage("Bonjour", responses.EasyInputMessageRoleAssistant),
		responses.ResponseInputItemParamOfMessage("Again", responses.EasyInputMessageRoleUser),
	}
	r, err := s.client.Responses.New(t.Context(), responses.ResponseNewParams{Model: "fake",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}})
	if err != nil {
		t.Fatal(err)
	}
	want := chatMLPrompt("system", "Answer in French.", "user", "Hi", "assistant", "Bonjour", "user", "Again")
	if got := s.eng.Requests()[0].Prompt; got != want {
		t.Errorf("engine prompt %q, want %q", got, want)
	}
	got, err := s.client.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{})
	if err != nil || got.ID != r.ID || got.OutputText() != respReply || got.Usage.TotalTokens != r.Usage.TotalTokens {
		t.Fatalf("Get: %v, %+v", err, got)
	}

	list := func(q responses.InputItemListParams) ([]string, bool) {
		t.Helper()
		page, err := s.client.Responses.InputItems.List(t.Context(), r.ID, q)
		if err != nil {
			t.Fatalf("InputItems.List: %v", err)
		}
		var texts []string
		for _, it := range page.Data {
			if it.Type != "message" || !strings.HasPrefix(it.ID, "msg_") || it.Status != "completed" {
				t.Errorf("input item %+v", it)
			}
			texts = append(texts, it.Role+":"+it.Content.OfInputItemContentList[0].Text)
		}
		return texts, page.HasMore
	}
	asc := []string{"developer:Answer in French.", "user:Hi", "assistant:Bonjour", "user:Again"}
	desc := slices.Clone(asc)
	slices.Reverse(desc)
	if got, more := list(responses.InputItemListParams{}); !slices.Equal(got, desc) || more {
		t.Errorf("default order: %v (has_more %v), want newest first %v", got, more, desc)
	}
	if got, _ := list(responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc}); !slices.Equal(got, asc) {
		t.Errorf("order=asc: %v, want %v", got, asc)
	}
	if got, more := list(responses.InputItemListParams{Limit: openai.Int(2)}); !slices.Equal(got, desc[:2]) || !more {
		t.Errorf("limit=2: %v (has_more %v)", got, more)
	}
	_, b := s.raw(t, http.MethodGet, "/v1/responses/"+r.ID+"/input_items?order=asc&limit=1", "")
	var ids struct {
		Object  string `json:"object"`
		FirstID string `json:"first_id"`
		LastID  string `json:"last_id"`
		Data    []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &ids); err != nil || ids.Object != "list" || len(ids.Data) != 1 ||
		ids.FirstID != ids.Data[0].ID || ids.LastID != ids.Data[0].ID {
		t.Errorf("page %s", b)
	}
	if got, _ := list(responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc, After: openai.String(ids.LastID)}); !slices.Equal(got, asc[1:]) {
		t.Errorf("after first: %v, want %v", got, asc[1:])
	}

	if err := s.client.Responses.Delete(t.Context(), r.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.client.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{}); !isStatus(err, 404) {
		t.Errorf("Get after delete: %v", err)
	}
	if _, err := s.client.Responses.InputItems.List(t.Context(), r.ID, responses.InputItemListParams{}); !isStatus(err, 404) {
		t.Errorf("input_items after delete: %v", err)
	}
	if err := s.client.Responses.Delete(t.Context(), r.ID); !isStatus(err, 404) {
		t.Errorf("second Delete: %v", err)
	}
}

func TestResponsesDeleteBody(t *testing.T) {
	s := newResponsesServer(t)
	r, err := s.client.Responses.New(t.Context(), responses.ResponseNewParams{Model: "fake", Input: text("hi")})
	if err != nil {
		t.Fatal(err)
	}
	resp, b := s.raw(t, http.MethodDelete, "/v1/responses/"+r.ID, "")
	if want := `{"deleted":true,"id":"` + r.ID + `","object":"response"}`; resp.StatusCode != 200 || string(b) != want {
		t.Errorf("DELETE: %d %s, want %s", resp.StatusCode, b, want)
	}
}

func TestResponsesStoreFalse(t *testing.T) {
	s := newResponsesServer(t)
	r, err := s.client.Responses.New(t.Context(), responses.ResponseNewParams{Model: "fake", Input: text("hi"), Store: openai.Bool(false)})
	if err != nil || !strings.Contains(r.RawJSON(), `"store":false`) || r.OutputText() != respReply {
		t.Fatalf("store=false: %v, %+v", err, r)
	}
	if _, err := s.client.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{}); !isStatus(err, 404) {
		t.Errorf("GET of a store=false response: %v, want 404", err)
	}
	_, err = s.client.Responses.New(t.Context(), responses.ResponseNewParams{Model: "fake", Input: text("more"), PreviousResponseID: openai.String(r.ID)})
	if !isStatus(err, 404) {
		t.Errorf("continuing a store=false response: %v, want 404", err)
	}
}

// TestResponsesPreviousAcrossRestart continues a conversation after the server and its store
// restart on the same database file: the chain is rebuilt from SQLite, and the new prompt
// starts with the old prompt and reply (what makes it warm in the prefix cache).
func TestResponsesPreviousAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	a := startResponses(t, path, 4096, nil)
	r1, err := a.client.Responses.New(t.Context(), responses.ResponseNewParams{Model: "fake", Input: text("Hi"), Instructions: openai.String("Be brief.")})
	if err != nil {
		t.Fatal(err)
	}
	firstPrompt := a.eng.Requests()[0].Prompt
	a.close()

	b := startResponses(t, path, 4096, nil)
	r2, err := b.client.Responses.New(t.Context(), responses.ResponseNewParams{Model: "fake", Input: text("And again?"),
		Instructions: openai.String("Be brief."), PreviousResponseID: openai.String(r1.ID)})
	if err != nil {
		t.Fatalf("continue after restart: %v", err)
	}
	if r2.PreviousResponseID != r1.ID || r2.OutputText() != respReply {
		t.Errorf("r2 previous %q text %q", r2.PreviousResponseID, r2.OutputText())
	}
	second := b.eng.Requests()[0].Prompt
	if !strings.HasPrefix(second, firstPrompt+respReply) {
		t.Errorf("second prompt %q does not start with the first prompt + reply %q", second, firstPrompt+respReply)
	}
	if want := chatMLPrompt("system", "Be brief.", "user", "Hi", "assistant", respReply, "user", "And again?"); second != want {
		t.Errorf("second prompt %q, want %q", second, want)
	}

	// A third turn (streamed) with new instructions: the earlier instructions are not carried.
	evs, err := streamEvents(t, b, responses.ResponseNewParams{Model: "fake", Input: text("Last."),
		Instructions: openai.String("Be loud."), PreviousResponseID: openai.String(r2.ID)})
	if err != nil || evs[len(evs)-1].Type != "response.completed" {
		t.Fatalf("third turn: %v", err)
	}
	want := chatMLPrompt("system", "Be loud.", "user", "Hi", "assistant", respReply, "user", "And again?", "assistant", respReply, "user", "Last.")
	if got := b.eng.Requests()[1].Prompt; got != want {
		t.Errorf("third prompt %q, want %q", got, want)
	}
	// input_items lists only the response's own input, not the conversation before it.
	page, err := b.client.Responses.InputItems.List(t.Context(), r2.ID, responses.InputItemListParams{})
	if err != nil || len(page.Data) != 1 || page.Data[0].Content.OfInputItemContentList[0].Text != "And again?" {
		t.Errorf("input_items of r2: %v, %+v", err, page)
	}
}
