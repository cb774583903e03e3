package app

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/app/peertest"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/forward"
)

// TestForwardToOllama: a forwarding model whose upstream is a real Ollama server (the pinned
// version, built by make peers; app/peertest) serving stories260K: the OpenAI SDK, streaming and
// not, and the Anthropic SDK talk to superfluid, which relays to Ollama's /v1 under Ollama's
// model name; the replies and their usage come back.
func TestForwardToOllama(t *testing.T) {
	o := peertest.Start(t) // skips, saying why, without the binary or ../shared
	ctx := context.Background()
	m, err := forward.NewModel(ctx, "team-stories", forward.Config{URL: o.OpenAI(), Model: o.Model, MustAnswer: true})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(server.New(server.Config{}, core.New(core.Config{}, nil, m)))
	t.Cleanup(front.Close)
	params := openai.ChatCompletionNewParams{Model: "team-stories", MaxTokens: openai.Int(12), Temperature: openai.Float(0),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")}}
	res, err := sdk(front.URL).Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != "team-stories" || res.Choices[0].Message.Content == "" || res.Usage.CompletionTokens == 0 || res.Usage.PromptTokens == 0 {
		t.Fatalf("reply %+v", res)
	}
	stream := sdk(front.URL).Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil || acc.Choices[0].Message.Content == "" || acc.Usage.CompletionTokens == 0 {
		t.Fatalf("stream: %v, %q, usage %+v", err, acc.Choices[0].Message.Content, acc.Usage)
	}
	ac := anthropic.NewClient(anthropicopt.WithBaseURL(front.URL), anthropicopt.WithAPIKey("unused"), anthropicopt.WithMaxRetries(0))
	msg, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "team-stories", MaxTokens: 12,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Once upon a time"))}})
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) == 0 || msg.Content[0].Text == "" || msg.Usage.OutputTokens == 0 {
		t.Fatalf("anthropic reply %+v", msg)
	}
}
