package llamacpp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// Images and audio through the real engine: random-weight projectors gguftest writes for a
// 64-wide text model, encoded by mtmd and decoded at their place in the prompt.

// testMarker stands where an image or clip goes, as the core's per-request marker does.
const testMarker = "<__media_0123456789abcdef__>"

// mediaFiles is a text model and projectors written for it.
type mediaFiles struct {
	name, model, vision, audio string
	visionTokens, audioTokens  int // positions per image, per clip of up to 60 s
}

// writeMediaFiles writes the projectors beside each 64-wide text model at hand: a written tiny
// llama, and stories260K when ../shared/models has it.
func writeMediaFiles(t *testing.T) []mediaFiles {
	t.Helper()
	dir := t.TempDir()
	tiny := filepath.Join(dir, "tiny.gguf")
	if err := gguftest.WriteTinyLlama(tiny, gguftest.TinyLlamaOptions{Embd: 64}); err != nil {
		t.Fatal(err)
	}
	models := []string{tiny}
	if stories := filepath.Join(sharedModels, "stories260K.gguf"); fileExists(stories) {
		models = append(models, stories)
	}
	vopts, aopts := gguftest.VisionProjectorOptions{}, gguftest.AudioProjectorOptions{}
	vision, audio := filepath.Join(dir, "mmproj-vision.gguf"), filepath.Join(dir, "mmproj-audio.gguf")
	if err := gguftest.WriteVisionProjector(vision, vopts); err != nil {
		t.Fatal(err)
	}
	if err := gguftest.WriteAudioProjector(audio, aopts); err != nil {
		t.Fatal(err)
	}
	var out []mediaFiles
	for _, m := range models {
		out = append(out, mediaFiles{name: filepath.Base(m), model: m, vision: vision, audio: audio,
			visionTokens: vopts.ImageTokens(), audioTokens: aopts.WindowTokens()})
	}
	return out
}

// loadMedia loads model with the projector, closed when the test ends.
func loadMedia(t *testing.T, model, projector string, parallel int, edits ...func(*Options)) *Engine {
	t.Helper()
	opts := Options{ModelPath: model, ProjectorPath: projector, ContextLength: 256, Parallel: parallel}
	for _, edit := range edits {
		edit(&opts)
	}
	e, err := Load(opts)
	if err != nil {
		t.Fatalf("load %s with %s: %v", model, projector, err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// testImage is a w×h RGB image whose pixels depend on seed, hashed as the core hashes one.
func testImage(w, h, seed int) llm.Media {
	rgb := make([]byte, w*h*3)
	for y := range h {
		for x := range w {
			i := (y*w + x) * 3
			rgb[i], rgb[i+1], rgb[i+2] = byte(x*7+seed*53), byte(y*11+seed*29), byte((x^y)*seed)
		}
	}
	return llm.Media{Kind: llm.MediaImage, Width: w, Height: h, RGB: rgb, Hash: mediaHash(rgb)}
}

// testClip is seconds of a sine of freq Hz at 16 kHz, as float32 PCM.
func testClip(seconds, freq float64) llm.Media {
	n := int(seconds * llm.AudioSampleRate)
	pcm := make([]byte, 4*n)
	for i := range n {
		v := 0.5 * math.Sin(2*math.Pi*freq*float64(i)/llm.AudioSampleRate)
		binary.LittleEndian.PutUint32(pcm[4*i:], math.Float32bits(float32(v)))
	}
	return llm.Media{Kind: llm.MediaAudio, PCM: pcm, Hash: mediaHash(pcm)}
}

func mediaHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// mediaReq is a greedy request of prefix, the media (a marker each), then suffix.
func mediaReq(prefix, suffix string, maxTokens int, media ...llm.Media) *llm.Request {
	req := greedy(prefix+strings.Repeat(testMarker, len(media))+suffix, maxTokens)
	req.Media, req.MediaMarker = media, testMarker
	return req
}

// textTokens is the number of tokens of prefix (with BOS) and of prefix and suffix together,
// each tokenized on its own as the engine tokenizes the text around a marker.
func textTokens(t *testing.T, e *Engine, prefix, suffix string) (head, total int) {
	t.Helper()
	tail, err := e.Tokenize(t.Context(), suffix, false, true)
	if err != nil {
		t.Fatal(err)
	}
	head = len(tokenize(t, e, prefix))
	return head, head + len(tail)
}

const (
	mediaPrefix = "Once upon a time"
	mediaSuffix = " there was a little girl who"
)

// TestMediaImageChangesReply: an image changes the greedy reply against the same text without
// it, and two images give two replies; prompt_tokens counts the text tokens and the image's
// positions (ImageTokens of the projector); re-sending the same image and prompt is served
// from the cache but for the last position and replies the same; another image after the same
// text reuses only the text before the image.
func TestMediaImageChangesReply(t *testing.T) {
	for _, f := range writeMediaFiles(t) {
		t.Run(f.name, func(t *testing.T) {
			e := loadMedia(t, f.model, f.vision, 2)
			if info := e.Info(); !info.Vision || info.Audio || info.Projector != f.vision {
				t.Fatalf("info: vision %t audio %t projector %q; want vision from %s", info.Vision, info.Audio, info.Projector, f.vision)
			}
			plain := mustGenerate(t, e, greedy(mediaPrefix+mediaSuffix, 24))
			imgA, imgB := testImage(40, 30, 1), testImage(40, 30, 2)
			a := mustGenerate(t, e, mediaReq(mediaPrefix, mediaSuffix, 24, imgA))
			head, text := textTokens(t, e, mediaPrefix, mediaSuffix)
			if want := text + f.visionTokens; a.started.PromptTokens != want {
				t.Errorf("prompt tokens %d, want %d text + %d image positions = %d", a.started.PromptTokens, text, f.visionTokens, want)
			}
			again := mustGenerate(t, e, mediaReq(mediaPrefix, mediaSuffix, 24, imgA))
			if again.started.CachedTokens != again.started.PromptTokens-1 || again.text != a.text {
				t.Errorf("re-sent image: cached %d of %d, reply %q; want %d cached and the reply %q",
					again.started.CachedTokens, again.started.PromptTokens, again.text, again.started.PromptTokens-1, a.text)
			}
			b := mustGenerate(t, e, mediaReq(mediaPrefix, mediaSuffix, 24, imgB))
			if b.started.CachedTokens != head {
				t.Errorf("another image: cached %d, want the %d tokens before the image", b.started.CachedTokens, head)
			}
			t.Logf("plain %q\nimage A %q\nimage B %q", plain.text, a.text, b.text)
			if a.text == plain.text || a.text == b.text {
				t.Errorf("the image changed nothing: plain %q, image A %q, image B %q", plain.text, a.text, b.text)
			}
		})
	}
}

// TestMediaAudioChangesReply is the same for audio: a 25 s clip is one window of WindowTokens
// positions; another clip gives another reply, the same clip again is a cache hit.
func TestMediaAudioChangesReply(t *testing.T) {
	for _, f := range writeMediaFiles(t) {
		t.Run(f.name, func(t *testing.T) {
			e := loadMedia(t, f.model, f.audio, 2)
			if info := e.Info(); info.Vision || !info.Audio {
				t.Fatalf("info: vision %t audio %t; want audio only", info.Vision, info.Audio)
			}
			plain := mustGenerate(t, e, greedy(mediaPrefix+mediaSuffix, 24))
			low, high := testClip(25, 220), testClip(25, 1760)
			a := mustGenerate(t, e, mediaReq(mediaPrefix, mediaSuffix, 24, low))
			_, text := textTokens(t, e, mediaPrefix, mediaSuffix)
			if want := text + f.audioTokens; a.started.PromptTokens != want {
				t.Errorf("prompt tokens %d, want %d text + %d audio positions = %d", a.started.PromptTokens, text, f.audioTokens, want)
			}
			again := mustGenerate(t, e, mediaReq(mediaPrefix, mediaSuffix, 24, low))
			if again.started.CachedTokens != again.started.PromptTokens-1 || again.text != a.text {
				t.Errorf("re-sent clip: cached %d of %d, reply %q; want all but one cached and %q",
					again.started.CachedTokens, again.started.PromptTokens, again.text, a.text)
			}
			b := mustGenerate(t, e, mediaReq(mediaPrefix, mediaSuffix, 24, high))
			t.Logf("plain %q\n220 Hz %q\n1760 Hz %q", plain.text, a.text, b.text)
			if a.text == plain.text || a.text == b.text {
				t.Errorf("the clip changed nothing: plain %q, 220 Hz %q, 1760 Hz %q", plain.text, a.text, b.text)
			}
		})
	}
}

// TestMediaBesideText: image prompts and a text prompt running side by side (a tick's text
// batch beside a lane's image chunk), and an image decoded over several batches (BatchSize 8
// for its 16 positions), reply exactly what each replies alone on a fresh engine.
func TestMediaBesideText(t *testing.T) {
	f := writeMediaFiles(t)[0]
	reqs := []*llm.Request{
		mediaReq(mediaPrefix, mediaSuffix, 32, testImage(24, 24, 3)),
		greedy(mediaPrefix+" a dragon flew over the hills and", 32),
		mediaReq("The dog", " barked at the", 32, testImage(64, 16, 4), testImage(8, 8, 5)),
	}
	alone := make([]string, len(reqs))
	solo := loadMedia(t, f.model, f.vision, 1)
	for i, req := range reqs {
		alone[i] = mustGenerate(t, solo, req).text
	}
	for _, batch := range []int{0, 8} {
		e := loadMedia(t, f.model, f.vision, len(reqs), func(o *Options) { o.BatchSize = batch })
		var wg sync.WaitGroup
		got := make([]string, len(reqs))
		for i, req := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := generate(t, e, req)
				if err != nil {
					t.Errorf("batch %d, request %d: %v", batch, i, err)
				}
				got[i] = r.text
			}()
		}
		wg.Wait()
		for i := range reqs {
			if got[i] != alone[i] {
				t.Errorf("batch %d, request %d side by side: %q; alone: %q", batch, i, got[i], alone[i])
			}
		}
		if n := e.mediaLive.Load(); n != 0 {
			t.Errorf("batch %d: %d chunk lists left unfreed", batch, n)
		}
	}
}

// TestMediaSpeculationOff: a request with media that asks for speculation decodes without it,
// and Done.Spec says why.
func TestMediaSpeculationOff(t *testing.T) {
	f := writeMediaFiles(t)[0]
	e := loadMedia(t, f.model, f.vision, 1)
	want := mustGenerate(t, e, mediaReq(mediaPrefix, mediaSuffix, 24, testImage(16, 16, 6)))
	r := mustGenerate(t, e, withSpec(mediaReq(mediaPrefix, mediaSuffix, 24, testImage(16, 16, 6)), llm.SpecNgram, 4))
	if s := r.done.Spec; s == nil || s.Proposed != 0 || !strings.Contains(s.Note, "images or audio") {
		t.Fatalf("spec %+v; want none proposed and a note saying speculation is off for media", s)
	}
	if r.text != want.text {
		t.Errorf("reply %q, without speculation %q", r.text, want.text)
	}
}

// TestMediaDiskCache: an image prompt saved as the engine closes is restored by the next
// engine with the same projector (pseudo tokens are negative ids in the file) and replies the
// same; an engine with another projector restores nothing of it.
func TestMediaDiskCache(t *testing.T) {
	f := writeMediaFiles(t)[0]
	dir := t.TempDir()
	kv := func(o *Options) { o.KVDir = dir }
	req := func() *llm.Request {
		return mediaReq(mediaPrefix+" in a land far away", mediaSuffix+" liked to play", 16, testImage(20, 20, 7))
	}
	first := loadMedia(t, f.model, f.vision, 1, kv)
	cold := mustGenerate(t, first, req())
	first.Close()
	if len(kvFiles(t, dir, false)) == 0 {
		t.Fatal("no prefix saved as the engine closed")
	}
	second := loadMedia(t, f.model, f.vision, 1, kv)
	warm := mustGenerate(t, second, req())
	if warm.started.RestoredTokens != warm.started.PromptTokens-1 || warm.text != cold.text {
		t.Errorf("restored %d of %d prompt tokens, reply %q; want %d restored and %q",
			warm.started.RestoredTokens, warm.started.PromptTokens, warm.text, warm.started.PromptTokens-1, cold.text)
	}
	second.Close()
	otherProj := filepath.Join(t.TempDir(), "mmproj-other.gguf")
	if err := gguftest.WriteVisionProjector(otherProj, gguftest.VisionProjectorOptions{Seed: 2}); err != nil {
		t.Fatal(err)
	}
	third := loadMedia(t, f.model, otherProj, 1, kv)
	if r := mustGenerate(t, third, req()); r.started.RestoredTokens != 0 {
		t.Errorf("another projector restored %d tokens of this one's prefix", r.started.RestoredTokens)
	}
}

// TestPseudoTokens: a media position's id is negative, within int32, a function of the hash,
// chunk and position, and differs between contents.
func TestPseudoTokens(t *testing.T) {
	seen := map[int]bool{}
	for _, hash := range []string{"a", "b"} {
		for c := range 2 {
			base := pseudoBase(hash, c)
			for k := range 1000 {
				tok := pseudoToken(base, k)
				if tok >= 0 || tok < math.MinInt32 {
					t.Fatalf("pseudo token %d of %s/%d/%d", tok, hash, c, k)
				}
				if tok != pseudoToken(pseudoBase(hash, c), k) {
					t.Fatalf("pseudo token of %s/%d/%d is not a function of them", hash, c, k)
				}
				seen[tok] = true
			}
		}
	}
	if len(seen) < 3990 {
		t.Errorf("%d distinct ids for 4000 positions", len(seen))
	}
}

// TestMediaSpans: a common prefix ending inside a chunk rounds down to its start (as the
// lanes, copies and the disk cache see it: reusable), text stops before a chunk, and a chunk is
// found by its start.
func TestMediaSpans(t *testing.T) {
	m := &promptMedia{spans: []mediaSpan{{start: 5, n: 16}, {start: 30, n: 4}}}
	for _, c := range []struct{ in, want int }{{0, 0}, {5, 5}, {6, 5}, {20, 5}, {21, 21}, {29, 29}, {31, 30}, {34, 34}} {
		if got := m.roundDown(c.in); got != c.want {
			t.Errorf("roundDown(%d) = %d, want %d", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ from, to, want int }{{0, 100, 5}, {0, 5, 5}, {0, 4, 4}, {5, 100, 5}, {21, 100, 30}, {34, 40, 40}} {
		if got := m.textEnd(c.from, c.to); got != c.want {
			t.Errorf("textEnd(%d, %d) = %d, want %d", c.from, c.to, got, c.want)
		}
	}
	if s := m.spanAt(30); s == nil || s.n != 4 {
		t.Errorf("spanAt(30) = %+v", s)
	}
	if s := m.spanAt(6); s != nil {
		t.Errorf("spanAt(6) = %+v, want none", s)
	}
	// A lane holding the first 10 positions (5 of them inside the first chunk) serves 5.
	prompt := make([]int, 40)
	for i := range prompt {
		prompt[i] = i
	}
	j := &job{req: &llm.Request{}, prompt: prompt, media: m}
	if got := reusable(&lane{}, prompt[:10], j); got != 5 {
		t.Errorf("reusable inside a chunk = %d, want its start 5", got)
	}
	if got := reusable(&lane{}, prompt[:21], j); got != 21 {
		t.Errorf("reusable after a whole chunk = %d, want 21", got)
	}
	var none *promptMedia
	if none.roundDown(7) != 7 || none.textEnd(1, 9) != 9 || none.spanAt(0) != nil {
		t.Error("a text prompt's media is not a no-op")
	}
	none.release()
}
