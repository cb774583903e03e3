package core_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestTranscriptionRecord: a transcription is one request record whose tokens are its
// windows' sums and whose finish reason says when a window's text was cut at its cap
// ("length"; "stop" when none was): a 40 s file in two windows, the second answering past the
// 512 tokens a window may write.
func TestTranscriptionRecord(t *testing.T) {
	st := servertest.Store(t)
	tmpl, err := chat.Parse("")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	ears := enginetest.NewScripted(8192, func(*llm.Request) string {
		if n.Add(1) == 2 {
			return strings.Repeat("la ", 400) // 1200 tokens: cut at 512
		}
		return "hello there"
	})
	svc := core.New(core.Config{}, st, &core.Model{ID: "ears", Path: "/models/ears.gguf", Engine: ears, Template: tmpl, ContextLength: 8192, Audio: true})
	for _, tt := range []struct {
		id, finish string
		secs       float64
	}{
		{"transcript-cut", "length", 40},
		{"transcript-whole", "stop", 10},
	} {
		n.Store(0)
		tr, err := svc.Transcribe(context.Background(), &core.TranscribeRequest{ID: tt.id, Endpoint: "/v1/audio/transcriptions", Model: "ears",
			Audio: servertest.WAV(tt.secs, 440), MIME: "audio/wav"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		rec, err := st.Request(context.Background(), tt.id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.PromptTokens != tr.Usage.PromptTokens || rec.CompletionTokens != tr.Usage.CompletionTokens || rec.CompletionTokens == 0 ||
			rec.FinishReason != tt.finish || rec.Status != 200 {
			t.Errorf("%s: record %d prompt, %d completion tokens, finish %q, status %d; want the transcript's %d and %d, %q, 200",
				tt.id, rec.PromptTokens, rec.CompletionTokens, rec.FinishReason, rec.Status, tr.Usage.PromptTokens, tr.Usage.CompletionTokens, tt.finish)
		}
	}
}
