package core_test

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/media"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestMediaDecodedBudget: what a request's media decode to is bounded together
// (Limits.MaxDecodedBytes), counted once per choice: a few KiB of PNG can decode to 100 MB and
// each choice carries every clip to the worker, so without it a small request could make the
// server hold gigabytes. Four 8×8 images (192 bytes of RGB each) fit a 768-byte budget; a
// fifth, the same four with n=2, or an audio clip beside them is refused at the part that
// passes it, with nothing sent to the engine.
func TestMediaDecodedBudget(t *testing.T) {
	png := servertest.PNG(8, 8, color.RGBA{9, 8, 7, 255})
	images := func(n int) []llm.MediaPart {
		out := make([]llm.MediaPart, n)
		for i := range out {
			out[i] = llm.MediaPart{Kind: llm.MediaImage, MIME: "image/png", Data: png, Where: fmt.Sprintf("messages[0].content[%d]", i)}
		}
		return out
	}
	clip := llm.MediaPart{Kind: llm.MediaAudio, MIME: "audio/wav", Data: servertest.WAV(0.1, 440), Where: "messages[0].content[4]"}
	for _, tt := range []struct {
		name  string
		media []llm.MediaPart
		n     int
		where string // "" when it fits
		msg   string
	}{
		{"four images fit", images(4), 1, "", ""},
		{"a fifth passes the budget", images(5), 1, "messages[0].content[4]", "come to 960 bytes decoded"},
		{"four images, two choices", images(4), 2, "messages[0].content[2]", "come to 2 KiB decoded (3 bytes a pixel, 4 a sample), 576 bytes for each of its 2 choices"},
		{"an audio clip beside them", append(images(4), clip), 1, "messages[0].content[4]", "come to 7 KiB decoded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := enginetest.New(4096, "ok")
			svc := core.New(core.Config{Media: media.Limits{MaxDecodedBytes: 4 * 8 * 8 * 3}}, nil, mediaModel(t, fake, true, true))
			req := &core.ChatRequest{ID: "chatcmpl-budget", Model: "fake", N: tt.n,
				Messages: []chat.Message{{Role: "user", Content: "what are these?", Media: tt.media}}}
			_, err := svc.Chat(context.Background(), req, func(int, llm.Event) error { return nil })
			if tt.where == "" {
				got, _ := fake.LastRequest()
				if err != nil || len(got.Media) != len(tt.media) {
					t.Fatalf("within the budget: %v, the engine got %d clips", err, len(got.Media))
				}
				return
			}
			var me *core.MediaError
			if !errors.Is(err, llm.ErrInvalidInput) || !errors.As(err, &me) || me.Where != tt.where ||
				!strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), "over the 768 bytes one request may take") {
				t.Fatalf("error %v (part %+v), want invalid input at %s saying %q", err, me, tt.where, tt.msg)
			}
			if n := len(fake.Requests()); n != 0 {
				t.Errorf("a refused request reached the engine %d times", n)
			}
		})
	}
}
