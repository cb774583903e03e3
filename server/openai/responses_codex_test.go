package openai_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/superfluid/superfluid/server/servertest"
)

// codexFirst is the Codex CLI 0.171.0's first request, captured unmodified, with its headers;
// the model it names is this test server's.
func codexFirst(t *testing.T) ([]byte, map[string]string) {
	t.Helper()
	body, err := os.ReadFile("testdata/agents/codex-0.171.0-first.json")
	if err != nil {
		t.Fatal(err)
	}
	var headers map[string]string
	h, err := os.ReadFile("testdata/agents/codex-0.171.0-first.headers.json")
	if err == nil {
		err = json.Unmarshal(h, &headers)
	}
	if err != nil {
		t.Fatal(err)
	}
	const model = `"model": "test-model",`
	if !bytes.Contains(body, []byte(model)) {
		t.Fatalf("the fixture does not name test-model")
	}
	return bytes.Replace(body, []byte(model), []byte(`"model": "fake",`), 1), headers
}

// postStream posts body with headers and reads the SSE events as the SDK types them.
func postStream(t *testing.T, s *respServer, body []byte, headers map[string]string) []responses.ResponseStreamEventUnion {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+"/v1/responses", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b.Bytes())
	}
	var evs []responses.ResponseStreamEventUnion
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev responses.ResponseStreamEventUnion
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestResponsesCodexReplay replays the captured Codex request through the real router on the
// fake engine: a 200 event stream from response.created to response.completed, the web_search
// tool dropped with a warning, the namespace's functions offered, nothing stored (store
// false); and a second turn built as Codex builds it (the whole history, the call's output
// and the reasoning blob sent back) continues the first prompt.
func TestResponsesCodexReplay(t *testing.T) {
	body, headers := codexFirst(t)
	call := hermesCall("exec_command", `{"cmd": "echo hi > hi.txt"}`)
	s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{ctx: 1 << 17, template: servertest.ToolTemplate,
		reply: "<think>\nWrite the file.\n</think>\n\n" + call})
	evs := postStream(t, s, body, headers)
	if evs[len(evs)-1].Type != "response.completed" {
		t.Fatalf("terminal event %s", evs[len(evs)-1].Type)
	}
	final := checkStream(t, evs)
	want := []string{"reasoning: Write the file.", `function_call/completed: exec_command {"cmd":"echo hi > hi.txt"}`}
	if got := outputViews(&final); !slices.Equal(got, want) {
		t.Errorf("output %q, want %q", got, want)
	}
	ws := warnings(t, final.RawJSON())
	if len(ws) != 1 || !strings.Contains(ws[0], "tools[8] is a web_search tool") {
		t.Errorf("warnings %q, want the one about web_search", ws)
	}
	if ws := warnings(t, evs[0].Response.RawJSON()); len(ws) != 1 {
		t.Errorf("response.created warnings %q", ws)
	}
	first := lastPrompt(s)
	for _, want := range []string{`"name": "exec_command"`, `"name": "spawn_agent"`, "<|im_start|>system\nYou are a coding agent running in the Codex CLI"} {
		if !strings.Contains(first, want) {
			t.Errorf("the prompt lacks %q", want)
		}
	}
	if strings.Contains(first, "web_search") {
		t.Errorf("the prompt offers web_search")
	}
	rs := final.Output[0].AsReasoning()
	if !strings.HasPrefix(rs.EncryptedContent, "sfr1.") || len(rs.Summary) != 1 {
		t.Errorf("reasoning item %s, want a blob and a summary (include, reasoning.summary auto)", final.Output[0].RawJSON())
	}
	if resp, b := s.raw(t, http.MethodGet, "/v1/responses/"+final.ID, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of a store=false response: %d %s", resp.StatusCode, b)
	}

	// The second turn, as Codex sends it: the same request, its input grown by the output
	// items (reasoning without its plain content) and the call's output.
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var input []json.RawMessage
	_ = json.Unmarshal(req["input"], &input)
	reasoning, _ := json.Marshal(map[string]any{"type": "reasoning", "id": rs.ID, "summary": rs.Summary, "encrypted_content": rs.EncryptedContent})
	fc := final.Output[1].AsFunctionCall()
	input = append(input, reasoning, json.RawMessage(final.Output[1].RawJSON()),
		json.RawMessage(`{"type":"function_call_output","call_id":"`+fc.CallID+`","output":"Process exited with code 0"}`))
	req["input"], _ = json.Marshal(input)
	next, _ := json.Marshal(req)
	// Another server: with store false nothing of the first turn is needed on the server.
	s = startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{ctx: 1 << 17, template: servertest.ToolTemplate, reply: "Wrote hi.txt."})
	evs = postStream(t, s, next, headers)
	final = checkStream(t, evs)
	if got := outputViews(&final); !slices.Equal(got, []string{"message/completed: Wrote hi.txt."}) {
		t.Errorf("second turn %q", got)
	}
	second := lastPrompt(s)
	if !strings.HasPrefix(second, strings.TrimSuffix(first, "<|im_start|>assistant\n")) ||
		!strings.Contains(second, call+"<|im_end|>\n<|im_start|>user\n<tool_response>\nProcess exited with code 0\n</tool_response>") {
		t.Errorf("the second prompt does not continue the first with the call and its output:\n%s", second[max(0, len(second)-600):])
	}
}
