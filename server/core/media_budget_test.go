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

// TestMediaHeldInFlight: the server holds at most four requests' worth of decoded media at
// once (decoding comes before a request waits for admission and a lane, so a full queue could
// otherwise hold 64 budgets): with four requests holding their whole budget, a fifth is 429
// busy with Retry-After, whatever its size; once they finish (and after refusals, which give
// back what they took) the same requests fit again.
func TestMediaHeldInFlight(t *testing.T) {
	png := servertest.PNG(8, 8, color.RGBA{9, 8, 7, 255})
	images := func(n int) []llm.MediaPart {
		out := make([]llm.MediaPart, n)
		for i := range out {
			out[i] = llm.MediaPart{Kind: llm.MediaImage, MIME: "image/png", Data: png, Where: fmt.Sprintf("messages[0].content[%d]", i)}
		}
		return out
	}
	fake := enginetest.New(4096, "ok")
	svc := core.New(core.Config{Media: media.Limits{MaxDecodedBytes: 4 * 8 * 8 * 3}}, nil, mediaModel(t, fake, true, true))
	chat1 := func(id string, parts []llm.MediaPart, emit core.Emit) error {
		req := &core.ChatRequest{ID: id, Model: "fake", Messages: []chat.Message{{Role: "user", Content: "what are these?", Media: parts}}}
		_, err := svc.Chat(context.Background(), req, emit)
		return err
	}
	for round := range 2 {
		started, release := make(chan struct{}, 4), make(chan struct{})
		errs := make(chan error, 4)
		for i := range 4 {
			go func() {
				once := false
				errs <- chat1(fmt.Sprintf("chatcmpl-held-%d-%d", round, i), images(4), func(int, llm.Event) error {
					if !once {
						once = true
						started <- struct{}{}
						<-release
					}
					return nil
				})
			}()
		}
		for range 4 {
			select {
			case <-started:
			case err := <-errs:
				t.Fatalf("round %d: a request within the limits: %v", round, err)
			}
		}
		err := chat1(fmt.Sprintf("chatcmpl-held-%d-late", round), images(1), func(int, llm.Event) error { return nil })
		var se *llm.StatusError
		if !errors.As(err, &se) || se.Status != 429 || se.RetryAfter <= 0 || !strings.Contains(se.Message, "the server is busy") {
			t.Fatalf("round %d: a fifth request while four hold their budgets: %v, want 429 busy with Retry-After", round, err)
		}
		close(release)
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: a request within the limits: %v", round, err)
			}
		}
		if err := chat1(fmt.Sprintf("chatcmpl-held-%d-after", round), images(4), func(int, llm.Event) error { return nil }); err != nil {
			t.Fatalf("round %d: after the others finished: %v", round, err)
		}
	}
}
