package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// weatherFunction is get_weather as a Responses function tool (flat, unlike chat's).
var weatherFunction = responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
	Name: "get_weather", Description: openai.String("The weather in a city"), Strict: openai.Bool(true),
	Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
}}

func toolRequest(input string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: "fake", Input: text(input), Tools: []responses.ToolUnionParam{weatherFunction}}
}

// genericCall is a call in the generic JSON shape a forced tool_choice's grammar produces.
const genericCall = `{"name": "get_weather", "arguments": {"city": "Oslo"}}`

// itemView is an output item reduced to what a streamed and a whole reply must share (their
// ids differ): type, status and text, or a call's name and arguments.
func itemView(it responses.ResponseOutputItemUnion) string {
	var sb strings.Builder
	switch it.Type {
	case "message":
		m := it.AsMessage()
		for _, c := range m.Content {
			sb.WriteString(c.Text)
		}
		return fmt.Sprintf("message/%s: %s", m.Status, sb.String())
	case "function_call":
		c := it.AsFunctionCall()
		var args bytes.Buffer
		if err := json.Compact(&args, []byte(c.Arguments)); err != nil {
			return fmt.Sprintf("function_call/%s: %s with arguments that are not JSON: %q", c.Status, c.Name, c.Arguments)
		}
		name := c.Name
		if c.Namespace != "" {
			name += "@" + c.Namespace
		}
		return fmt.Sprintf("function_call/%s: %s %s", c.Status, name, args.String())
	case "custom_tool_call":
		c := it.AsCustomToolCall()
		name := c.Name
		if c.Namespace != "" {
			name += "@" + c.Namespace
		}
		return fmt.Sprintf("custom_tool_call: %s %q", name, c.Input)
	case "reasoning":
		for _, c := range it.AsReasoning().Content {
			sb.WriteString(c.Text)
		}
		return "reasoning: " + sb.String()
	}
	return "unexpected item type " + it.Type
}

func outputViews(r *responses.Response) []string {
	var out []string
	for _, it := range r.Output {
		out = append(out, itemView(it))
	}
	return out
}

// itemGrammar is the events each item type has between output_item.added and .done.
var itemGrammar = map[string]*regexp.Regexp{
	"message": regexp.MustCompile(`^response\.content_part\.added( response\.output_text\.delta)* response\.output_text\.done response\.content_part\.done$`),
	"reasoning": regexp.MustCompile(`^response\.content_part\.added( response\.reasoning_summary_part\.added)?` +
		`( response\.reasoning_text\.delta( response\.reasoning_summary_text\.delta)?)* response\.reasoning_text\.done response\.content_part\.done` +
		`( response\.reasoning_summary_text\.done response\.reasoning_summary_part\.done)?$`),
	"function_call":    regexp.MustCompile(`^( response\.function_call_arguments\.delta)* response\.function_call_arguments\.done$`),
	"custom_tool_call": regexp.MustCompile(`^( response\.custom_tool_call_input\.delta)? response\.custom_tool_call_input\.done$`),
}

// checkStream checks a stream's events as OpenAI orders them: created, in_progress, then
// each output item in turn (added, its own events, done) with consecutive output_index and
// one item_id, then the terminal event. Each item's deltas join to its done text, which is
// the item as the terminal response has it. It returns the terminal response.
func checkStream(t *testing.T, evs []responses.ResponseStreamEventUnion) responses.Response {
	t.Helper()
	if len(evs) < 3 || evs[0].Type != "response.created" || evs[1].Type != "response.in_progress" {
		t.Fatalf("stream does not start with created, in_progress: %d events", len(evs))
	}
	for i, ev := range evs {
		if ev.SequenceNumber != int64(i) {
			t.Errorf("event %d (%s) has sequence_number %d", i, ev.Type, ev.SequenceNumber)
		}
	}
	last := evs[len(evs)-1]
	if last.Type != "response.completed" && last.Type != "response.incomplete" {
		t.Fatalf("terminal event %s", last.Type)
	}
	final := last.Response
	body, index := evs[2:len(evs)-1], 0
	for i := 0; i < len(body); index++ {
		added := body[i]
		if added.Type != "response.output_item.added" || added.OutputIndex != int64(index) {
			t.Fatalf("event %s at output_index %d, want output_item.added at %d", added.Type, added.OutputIndex, index)
		}
		id, typ := added.Item.ID, added.Item.Type
		switch typ {
		case "function_call":
			if c := added.Item.AsFunctionCall(); c.Arguments != "" || c.Status != "in_progress" || !strings.HasPrefix(c.ID, "fc_") || c.CallID == "" {
				t.Errorf("added function_call %+v, want empty arguments, in_progress, an fc_ id and a call_id", c)
			}
		case "message":
			if m := added.Item.AsMessage(); m.Status != "in_progress" || len(m.Content) != 0 {
				t.Errorf("added message %+v", m)
			}
		}
		var types []string
		// Each stream of deltas (text, reasoning, summary, arguments, input) joins to its done value.
		deltas, doneText := map[string]string{}, map[string]string{}
		for i++; i < len(body) && body[i].Type != "response.output_item.done"; i++ {
			ev := body[i]
			if ev.OutputIndex != int64(index) || ev.ItemID != id {
				t.Errorf("%s for output_index %d item %q, inside item %d %q", ev.Type, ev.OutputIndex, ev.ItemID, index, id)
			}
			types = append(types, ev.Type)
			switch {
			case strings.HasSuffix(ev.Type, ".delta"):
				deltas[strings.TrimSuffix(ev.Type, ".delta")] += ev.Delta
			case ev.Type == "response.function_call_arguments.done":
				doneText["response.function_call_arguments"] = ev.Arguments
			case ev.Type == "response.custom_tool_call_input.done":
				var done struct{ Input string }
				if err := json.Unmarshal([]byte(ev.RawJSON()), &done); err != nil {
					t.Error(err)
				}
				doneText["response.custom_tool_call_input"] = done.Input
			case strings.HasSuffix(ev.Type, "_text.done"):
				doneText[strings.TrimSuffix(ev.Type, ".done")] = ev.Text
			}
		}
		if g := itemGrammar[typ]; g == nil || !g.MatchString(strings.Join(types, " ")) && !g.MatchString(" "+strings.Join(types, " ")) {
			t.Errorf("item %d (%s) events: %v", index, typ, types)
		}
		if i == len(body) {
			t.Fatalf("item %d (%s) never done", index, typ)
		}
		done := body[i]
		i++
		if done.OutputIndex != int64(index) || done.Item.ID != id {
			t.Errorf("output_item.done at %d for %q, want %d %q", done.OutputIndex, done.Item.ID, index, id)
		}
		for k, d := range deltas {
			if d != doneText[k] {
				t.Errorf("item %d %s deltas %q, done %q", index, k, d, doneText[k])
			}
		}
		for k, d := range doneText {
			if d != deltas[k] {
				t.Errorf("item %d %s done %q, deltas %q", index, k, d, deltas[k])
			}
		}
		if index >= len(final.Output) || itemView(final.Output[index]) != itemView(done.Item) || final.Output[index].ID != id {
			t.Errorf("item %d done as %q; the final response has %v", index, itemView(done.Item), outputViews(&final))
		}
	}
	if len(final.Output) != index {
		t.Errorf("the stream announced %d items, the final response has %d", index, len(final.Output))
	}
	return final
}

// warnings is the response's superfluid.warnings.
func warnings(t *testing.T, raw string) []string {
	t.Helper()
	var obj struct {
		Superfluid *struct {
			Warnings []string `json:"warnings"`
		} `json:"superfluid"`
	}
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Superfluid == nil {
		return nil
	}
	return obj.Superfluid.Warnings
}

// TestResponsesFunctionCall: the reply's calls become function_call items, streamed or not,
// with the same items either way, and stored as served.
func TestResponsesFunctionCall(t *testing.T) {
	bergen := strings.Replace(weatherCall, "Oslo", "Bergen", 1)
	oslo, bergenCall := `function_call/completed: get_weather {"city":"Oslo"}`, `function_call/completed: get_weather {"city":"Bergen"}`
	broken := "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>"
	cases := []struct {
		name, reply string
		edit        func(*responses.ResponseNewParams)
		want        []string
		status      string
		warning     string // a substring of the one warning; "" for none
	}{
		{"one call", weatherCall, nil, []string{oslo}, "completed", ""},
		{"text, then a call", "Let me check.\n" + weatherCall, nil, []string{"message/completed: Let me check.", oslo}, "completed", ""},
		{"two calls", weatherCall + "\n" + bergen, nil, []string{oslo, bergenCall}, "completed", ""},
		{"parallel_tool_calls false", weatherCall + "\n" + bergen, func(p *responses.ResponseNewParams) { p.ParallelToolCalls = openai.Bool(false) },
			[]string{oslo}, "completed", "parallel_tool_calls is false"},
		{"tool_choice none", weatherCall, func(p *responses.ResponseNewParams) {
			p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsNone)}
		}, []string{"message/completed: " + weatherCall}, "completed", ""},
		{"a call that does not parse", broken, nil, []string{"message/completed: " + broken}, "completed", "does not parse"},
		{"tool_choice required", genericCall, func(p *responses.ResponseNewParams) {
			p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)}
		}, []string{oslo}, "completed", ""},
		// The item being written when the cap cut the reply is the incomplete one.
		{"cut by max_output_tokens after a call", weatherCall + "\nDone.", func(p *responses.ResponseNewParams) {
			p.MaxOutputTokens = openai.Int(int64(len(weatherCall) + 4))
		}, []string{oslo, "message/incomplete: Don"}, "incomplete", ""},
		{"cut by max_output_tokens inside a call", weatherCall, func(p *responses.ResponseNewParams) {
			p.MaxOutputTokens = openai.Int(30)
		}, []string{"message/incomplete: " + weatherCall[:30]}, "incomplete", "does not parse"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{template: servertest.ToolTemplate, reply: tc.reply})
			params := toolRequest("Weather in Oslo?")
			if tc.edit != nil {
				tc.edit(&params)
			}
			r, err := s.client.Responses.New(t.Context(), params)
			if err != nil {
				t.Fatal(err)
			}
			if got := outputViews(r); !slices.Equal(got, tc.want) || string(r.Status) != tc.status {
				t.Errorf("output %q status %s, want %q %s", got, r.Status, tc.want, tc.status)
			}
			ws := warnings(t, r.RawJSON())
			if tc.warning == "" && ws != nil || tc.warning != "" && (len(ws) != 1 || !strings.Contains(ws[0], tc.warning)) {
				t.Errorf("warnings %q, want %q", ws, tc.warning)
			}
			for _, it := range r.Output {
				if c := it.AsFunctionCall(); it.Type == "function_call" && (!strings.HasPrefix(c.ID, "fc_") || !strings.HasPrefix(c.CallID, "call_")) {
					t.Errorf("function_call ids %q, call_id %q", c.ID, c.CallID)
				}
			}

			evs, err := streamEvents(t, s, params)
			if err != nil {
				t.Fatal(err)
			}
			final := checkStream(t, evs)
			if got := outputViews(&final); !slices.Equal(got, tc.want) || string(final.Status) != tc.status {
				t.Errorf("streamed output %q status %s, want %q %s", got, final.Status, tc.want, tc.status)
			}
			if ws := warnings(t, final.RawJSON()); tc.warning != "" && len(ws) != 1 {
				t.Errorf("streamed warnings %q", ws)
			}
			for _, id := range []string{r.ID, final.ID} {
				got, err := s.client.Responses.Get(t.Context(), id, responses.ResponseGetParams{})
				if err != nil || !slices.Equal(outputViews(got), tc.want) {
					t.Errorf("GET %s: %v, %q", id, err, outputViews(got))
				}
			}
		})
	}
}

// TestResponsesFunctionCallWire: a function_call item and the tools and tool_choice echo have
// exactly OpenAI's fields; the tools reach the template, and tool_choice the engine.
func TestResponsesFunctionCallWire(t *testing.T) {
	s := startResponsesWith(t, filepath.Join(t.TempDir(), "db.sqlite"), respConfig{template: servertest.ToolTemplate, reply: genericCall})
	tool := `{"type":"function","name":"get_weather","description":"The weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true}`
	cases := []struct {
		choice, echo string
		forced       bool
	}{
		{``, `"auto"`, false},
		{`"auto"`, `"auto"`, false},
		{`"required"`, `"required"`, true},
		{`{"type":"function","name":"get_weather"}`, `{"type":"function","name":"get_weather"}`, true},
	}
	for _, tc := range cases {
		body := `{"model":"fake","input":"Weather in Oslo?","tools":[` + tool + `]`
		if tc.choice != "" {
			body += `,"tool_choice":` + tc.choice
		}
		resp, b := s.raw(t, http.MethodPost, "/v1/responses", body+"}")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.choice, resp.StatusCode, b)
		}
		var obj struct {
			Output     []map[string]json.RawMessage `json:"output"`
			Tools      json.RawMessage              `json:"tools"`
			ToolChoice json.RawMessage              `json:"tool_choice"`
		}
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		sameJSON(t, string(obj.Tools), "["+tool+"]")
		sameJSON(t, string(obj.ToolChoice), tc.echo)
		reqs := s.eng.Requests()
		got := reqs[len(reqs)-1]
		if forced := got.Format == llm.FormatSchema && bytes.Contains(got.Schema, []byte("get_weather")); forced != tc.forced {
			t.Errorf("tool_choice %s: engine format %q schema %.80s, want forced %v", tc.choice, got.Format, got.Schema, tc.forced)
		}
		if !strings.Contains(got.Prompt, `"name": "get_weather"`) {
			t.Errorf("the prompt lacks the tool:\n%s", got.Prompt)
		}
		if !tc.forced {
			continue // the generic JSON is content when no call is forced and the parser is Hermes
		}
		if len(obj.Output) != 1 {
			t.Fatalf("output %s", b)
		}
		var keys []string
		for k := range obj.Output[0] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if want := []string{"arguments", "call_id", "id", "name", "status", "type"}; !slices.Equal(keys, want) {
			t.Errorf("function_call keys %v, want %v", keys, want)
		}
		var args string
		if err := json.Unmarshal(obj.Output[0]["arguments"], &args); err != nil {
			t.Errorf("arguments %s are not a JSON string", obj.Output[0]["arguments"])
		}
		sameJSON(t, args, `{"city":"Oslo"}`)
	}
}

// TestResponsesToolLoop: a call, then its output sent back with previous_response_id, with the
// server restarted in between: the chain read back from SQLite renders the call and its
// result, exactly as a client sending the whole history would, and the prompt continues the
// first one (warm in the prefix cache).
func TestResponsesToolLoop(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "db.sqlite")
			a := startResponsesWith(t, path, respConfig{template: servertest.ToolTemplate, reply: "Let me check.\n" + weatherCall})
			params := toolRequest("Weather in Oslo?")
			params.Instructions = openai.String("Be brief.")
			var r1 *responses.Response
			if streamed {
				evs, err := streamEvents(t, a, params)
				if err != nil {
					t.Fatal(err)
				}
				final := checkStream(t, evs)
				r1 = &final
			} else {
				var err error
				if r1, err = a.client.Responses.New(t.Context(), params); err != nil {
					t.Fatal(err)
				}
			}
			if len(r1.Output) != 2 || r1.Output[1].Type != "function_call" {
				t.Fatalf("first turn %q", outputViews(r1))
			}
			call := r1.Output[1].AsFunctionCall()
			firstPrompt := a.eng.Requests()[0].Prompt
			a.close()

			b := startResponsesWith(t, path, respConfig{template: servertest.ToolTemplate, reply: "It is sunny in Oslo."})
			result := responses.ResponseInputItemParamOfFunctionCallOutput("sunny, 21 C")
			result.OfFunctionCallOutput.CallID = openai.String(call.CallID)
			next := responses.ResponseNewParams{Model: "fake", Instructions: openai.String("Be brief."), PreviousResponseID: openai.String(r1.ID),
				Tools: params.Tools, Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{result}}}
			r2, err := b.client.Responses.New(t.Context(), next)
			if err != nil {
				t.Fatalf("continue after restart: %v", err)
			}
			if got := outputViews(r2); !slices.Equal(got, []string{"message/completed: It is sunny in Oslo."}) {
				t.Errorf("final answer %q", got)
			}
			chained := b.eng.Requests()[0].Prompt
			for _, want := range []string{"Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
				"<tool_response>\nsunny, 21 C\n</tool_response>"} {
				if !strings.Contains(chained, want) {
					t.Errorf("prompt lacks %q:\n%s", want, chained)
				}
			}
			if !strings.HasPrefix(chained, firstPrompt) {
				t.Errorf("the second prompt does not continue the first:\n%s\n---\n%s", firstPrompt, chained)
			}

			// The same history sent whole (the first output items passed back as input) renders
			// the same prompt.
			var raw struct {
				Output []json.RawMessage `json:"output"`
			}
			if err := json.Unmarshal([]byte(r1.RawJSON()), &raw); err != nil {
				t.Fatal(err)
			}
			items := append([]json.RawMessage{json.RawMessage(`{"role":"user","content":"Weather in Oslo?"}`)}, raw.Output...)
			items = append(items, json.RawMessage(`{"type":"function_call_output","call_id":"`+call.CallID+`","output":"sunny, 21 C"}`))
			whole, _ := json.Marshal(items)
			tools, _ := json.Marshal(params.Tools)
			resp, body := b.raw(t, http.MethodPost, "/v1/responses", `{"model":"fake","store":false,"instructions":"Be brief.","tools":`+string(tools)+`,"input":`+string(whole)+`}`)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("whole history: %d %s", resp.StatusCode, body)
			}
			if got := b.eng.Requests()[1].Prompt; got != chained {
				t.Errorf("the whole history renders\n%s\nthe chain renders\n%s", got, chained)
			}

			// input_items of r2 is its own input: the function_call_output.
			page, err := b.client.Responses.InputItems.List(t.Context(), r2.ID, responses.InputItemListParams{})
			if err != nil || len(page.Data) != 1 || page.Data[0].Type != "function_call_output" {
				t.Fatalf("input_items: %v %+v", err, page)
			}
			if o := page.Data[0].AsFunctionCallOutput(); o.CallID != call.CallID || o.Output.OfString != "sunny, 21 C" || o.Status != "completed" {
				t.Errorf("input item %+v", o)
			}
		})
	}
}

// TestResponsesFunctionCallClientGone: a client that hangs up halfway through a streamed
// function call stops the generation; the request is recorded, nothing is stored, and the
// server keeps serving.
func TestResponsesFunctionCallClientGone(t *testing.T) {
	reply := "Checking the weather now. " + weatherCall
	f := setup(t, config{template: servertest.ToolTemplate, reply: reply, engine: func(e *enginetest.Engine) {
		e.TokenDelay = 5 * time.Millisecond
	}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	body := `{"model":"fake","stream":true,"input":"Weather?","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/v1/responses", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var id string
	for data := range readFrames(resp.Body) {
		var ev struct {
			Type     string `json:"type"`
			Response struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "response.created" {
			id = ev.Response.ID
		}
		if ev.Type == "response.output_text.delta" {
			break // the text before the call has begun: the call is yet to come
		}
	}
	time.Sleep(50 * time.Millisecond) // some of the call's tokens
	cancel()
	var rec store.RequestRecord
	waitFor(t, "the request record", func() bool {
		rec, err = f.st.Request(t.Context(), id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	})
	if !rec.ClientDisconnected || rec.CompletionTokens >= len(reply) {
		t.Errorf("record %+v", rec)
	}
	if resp, b := f.do(t, http.MethodGet, "/v1/responses/"+id, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of an abandoned response: %d %s", resp.StatusCode, b)
	}
	if resp, b := f.do(t, http.MethodPost, "/v1/responses", `{"model":"fake","input":"hi","max_output_tokens":2}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("after a disconnect: %d %s", resp.StatusCode, b)
	}
}
