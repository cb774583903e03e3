package llamacpp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// TestMediaRefused: media the model cannot take is llm.ErrUnsupportedInput naming the model
// and the kind; a request whose media and markers disagree, or whose media is malformed, is
// llm.ErrInvalidInput (and not unsupported). The engines serve on, and nothing is left
// unfreed.
func TestMediaRefused(t *testing.T) {
	f := writeMediaFiles(t)[0]
	vision := loadMedia(t, f.model, f.vision, 1)
	audio := loadMedia(t, f.model, f.audio, 1)
	img, clip := testImage(8, 8, 1), testClip(0.5, 440)
	edit := func(req *llm.Request, change func(*llm.Request)) *llm.Request {
		change(req)
		return req
	}
	cases := []struct {
		name        string
		e           *Engine
		req         *llm.Request
		unsupported bool
		says        []string
	}{
		{"no projector", testEngine, mediaReq("a", "b", 4, img), true, []string{filepath.Base(testModelPath), "an image", "projector"}},
		{"audio to vision", vision, mediaReq("a", "b", 4, clip), true, []string{filepath.Base(f.model), "audio", "no audio encoder"}},
		{"image to audio", audio, mediaReq("a", "b", 4, img), true, []string{"an image", "no vision encoder"}},
		{"more markers", vision, edit(mediaReq("a", "b", 4, img), func(r *llm.Request) { r.Prompt += testMarker }), false, []string{"2 times for 1"}},
		{"no marker in the prompt", vision, edit(mediaReq("a", "b", 4, img), func(r *llm.Request) { r.Prompt = "ab" }), false, []string{"0 times for 1"}},
		{"no marker named", vision, edit(mediaReq("a", "b", 4, img), func(r *llm.Request) { r.MediaMarker = "" }), false, []string{"no media marker"}},
		{"token ids", vision, edit(mediaReq("a", "b", 4, img), func(r *llm.Request) { r.Tokens = []int{1, 2} }), false, []string{"not token ids"}},
		{"short RGB", vision, edit(mediaReq("a", "b", 4, img), func(r *llm.Request) { r.Media[0].RGB = r.Media[0].RGB[:10] }), false, []string{"8×8 with 10 bytes"}},
		{"no size", vision, edit(mediaReq("a", "b", 4, img), func(r *llm.Request) { r.Media[0].Width = 0 }), false, []string{"0×8"}},
		// 900 KB of pixels that a LLaVA projector pads to a 100000² square: the worker aborted.
		{"a long strip", vision, mediaReq("a", "b", 4, testImage(3, 100000, 1)), false, []string{"image 0 is 3×100000", "up to 8192 pixels a side"}},
		{"a wide strip", vision, mediaReq("a", "b", 4, testImage(8193, 1, 1)), false, []string{"image 0 is 8193×1"}},
		{"odd PCM", audio, edit(mediaReq("a", "b", 4, clip), func(r *llm.Request) { r.Media[0].PCM = r.Media[0].PCM[:7] }), false, []string{"7 bytes of PCM"}},
		{"unknown kind", vision, edit(mediaReq("a", "b", 4, img), func(r *llm.Request) { r.Media[0].Kind = "video" }), false, []string{`"video"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := generate(t, c.e, c.req)
			if !errors.Is(err, llm.ErrInvalidInput) || errors.Is(err, llm.ErrUnsupportedInput) != c.unsupported {
				t.Fatalf("error %v; want invalid input, unsupported %t", err, c.unsupported)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
	for _, e := range []*Engine{vision, audio, testEngine} {
		mustGenerate(t, e, greedy("Once", 4))
		if n := e.mediaLive.Load(); n != 0 {
			t.Errorf("%s: %d chunk lists left unfreed", e.info.Projector, n)
		}
	}
	mustGenerate(t, vision, mediaReq("a", "b", 4, img))
	mustGenerate(t, audio, mediaReq("a", "b", 4, clip))
	for _, odd := range []llm.Media{testImage(1, 1, 2), testImage(500, 1, 3), testImage(1, 500, 4)} {
		mustGenerate(t, vision, mediaReq("a", "b", 4, odd)) // thin and tiny images are served
	}
}

// TestProjectorLoadErrors: a projector written for a 128-wide model beside a 64-wide one, a
// file that is not a projector, and a missing one each fail Load with invalid input naming
// both files and why.
func TestProjectorLoadErrors(t *testing.T) {
	f := writeMediaFiles(t)[0]
	wide := filepath.Join(t.TempDir(), "mmproj-wide.gguf")
	if err := gguftest.WriteVisionProjector(wide, gguftest.VisionProjectorOptions{TextEmbd: 128}); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "mmproj-missing.gguf")
	// A patch of 0 pixels aborted the worker as mtmd warmed the encoder up.
	noPatch := filepath.Join(t.TempDir(), "mmproj-no-patch.gguf")
	rewriteUint32(t, f.vision, noPatch, "clip.vision.patch_size", 0)
	for _, c := range []struct {
		name, projector string
		says            []string
	}{
		{"another width", wide, []string{wide, f.model, "n_embd = 128"}},
		{"a zero patch", noPatch, []string{noPatch, "clip.vision.patch_size is 0"}},
		{"a text model", f.model, []string{"not a multimodal projector", `"llama"`}},
		{"missing", missing, []string{missing, f.model}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := Load(Options{ModelPath: f.model, ProjectorPath: c.projector, ContextLength: 128, Parallel: 1})
			if err == nil {
				e.Close()
				t.Fatal("loaded")
			}
			if !errors.Is(err, llm.ErrInvalidInput) {
				t.Errorf("error %v is not invalid input", err)
			}
			for _, s := range append(c.says, f.model) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

// TestMediaCancelAndClose: a generation cancelled as its image prefill starts, and engines
// closed with image jobs running and queued, leave no chunk list unfreed; the first engine
// serves on.
func TestMediaCancelAndClose(t *testing.T) {
	f := writeMediaFiles(t)[0]
	e := loadMedia(t, f.model, f.vision, 1)
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		err := e.Generate(ctx, mediaReq(mediaPrefix, mediaSuffix, 64, testImage(32, 32, 8), testImage(32, 32, 9)), func(ev llm.Event) error {
			if ev.Started != nil {
				cancel()
			}
			return nil
		})
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled generation: %v", err)
		}
	}
	waitUnfreed(t, e)
	mustGenerate(t, e, mediaReq(mediaPrefix, mediaSuffix, 8, testImage(32, 32, 8)))

	for _, parallel := range []int{1, 2} {
		c := loadMedia(t, f.model, f.vision, parallel)
		var wg sync.WaitGroup
		started := make(chan struct{}, 8)
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := mediaReq(mediaPrefix, mediaSuffix, 200, testImage(16, 16, 10+i))
				req.IgnoreEOS = true
				err := c.Generate(context.Background(), req, func(ev llm.Event) error {
					if ev.Started != nil {
						started <- struct{}{}
					}
					return nil
				})
				if err != nil && !errors.Is(err, llm.ErrEngineFailure) {
					t.Errorf("generation cut by Close: %v", err)
				}
			}()
		}
		<-started
		c.Close()
		wg.Wait()
		if n := c.mediaLive.Load(); n != 0 {
			t.Errorf("%d lanes: %d chunk lists left unfreed after Close", parallel, n)
		}
	}
}

// waitUnfreed waits for the engine's chunk lists to be freed (a cancelled job's are freed by
// whichever of the loop and the request lets go last).
func waitUnfreed(t *testing.T, e *Engine) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.mediaLive.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d chunk lists left unfreed", e.mediaLive.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rewriteUint32 copies the GGUF at src to dst with the uint32 value of key set to v (the
// writers take no bad sizes; the value sits after the key's name and its type).
func rewriteUint32(t *testing.T, src, dst, key string, v uint32) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	name := binary.LittleEndian.AppendUint64(nil, uint64(len(key)))
	i := bytes.Index(b, append(name, key...))
	if i < 0 || binary.LittleEndian.Uint32(b[i+len(name)+len(key):]) != 4 { // GGUF type 4: uint32
		t.Fatalf("%s holds no uint32 %s", src, key)
	}
	binary.LittleEndian.PutUint32(b[i+len(name)+len(key)+4:], v)
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
