package llamacpp

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ollama/ollama/llama"
	"github.com/ollama/ollama/ml"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// These tests prove the random-weight projectors gguftest writes are real encoders: llama.cpp's
// mtmd loads them beside a 64-wide text model and turns an image (or a clip) into embeddings,
// through the ollama module's own wrappers rather than this package's engine.

// mediaTextModel is a text model a projector is written for.
type mediaTextModel struct {
	name string
	lctx *llama.Context
}

// mediaTextModels loads the 64-wide text models at hand, each with a small context of its
// own (the shared test engine's context belongs to its loop): a written tiny llama, and
// stories260K when ../shared/models has it.
func mediaTextModels(t *testing.T) []mediaTextModel {
	t.Helper()
	backendOnce.Do(llama.BackendInit)
	tiny := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := gguftest.WriteTinyLlama(tiny, gguftest.TinyLlamaOptions{Embd: 64}); err != nil {
		t.Fatal(err)
	}
	paths := []string{tiny}
	stories := filepath.Join(sharedModels, "stories260K.gguf")
	if _, err := os.Stat(stories); err == nil {
		paths = append(paths, stories)
	}
	var models []mediaTextModel
	for _, path := range paths {
		model, err := llama.LoadModelFromFile(path, llama.ModelParams{UseMmap: true})
		if err != nil {
			t.Fatalf("load %s: %v", path, err)
		}
		t.Cleanup(func() { llama.FreeModel(model) })
		if n := model.NEmbd(); n != 64 {
			t.Fatalf("%s is %d wide, the projectors are written for 64", path, n)
		}
		lctx, err := llama.NewContextWithModel(model, llama.NewContextParams(256, 64, 1, 2, ml.FlashAttentionDisabled, ""))
		if err != nil {
			t.Fatalf("context for %s: %v", path, err)
		}
		models = append(models, mediaTextModel{filepath.Base(path), lctx})
	}
	return models
}

// openProjector loads the projector at path for m, freed when the test ends.
func openProjector(t *testing.T, m mediaTextModel, path string) *llama.MtmdContext {
	t.Helper()
	mctx, err := llama.NewMtmdContext(m.lctx, path)
	if err != nil {
		t.Fatalf("%s: %v", m.name, err)
	}
	t.Cleanup(mctx.Free)
	return mctx
}

// mediaEmbeddings tokenizes one media file (mtmd decodes it) and returns the embeddings of
// its media chunks, checking each is the text model's width and finite.
func mediaEmbeddings(t *testing.T, m mediaTextModel, mctx *llama.MtmdContext, file []byte) [][]float32 {
	t.Helper()
	start := time.Now()
	chunks, err := mctx.MultimodalTokenize(m.lctx, file)
	if err != nil {
		t.Fatalf("%s: %v", m.name, err)
	}
	t.Logf("%s: tokenized and encoded %d bytes in %v", m.name, len(file), time.Since(start))
	var embeds [][]float32
	for _, c := range chunks {
		if c.Embed == nil {
			continue
		}
		if len(c.Embed) != 64 {
			t.Fatalf("%s: an embedding of %d values, want the text model's 64", m.name, len(c.Embed))
		}
		for _, x := range c.Embed {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("%s: embedding value %v", m.name, x)
			}
		}
		embeds = append(embeds, c.Embed)
	}
	return embeds
}

// sameEmbeddings reports whether a and b are equal value for value.
func sameEmbeddings(a, b [][]float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// spread is the largest difference between two values of the embeddings: zero when the
// encoder gave every position the same vector.
func spread(embeds [][]float32) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, e := range embeds {
		for _, x := range e {
			lo, hi = min(lo, float64(x)), max(hi, float64(x))
		}
	}
	return hi - lo
}

func rms(embeds [][]float32) float64 {
	sum, n := 0.0, 0
	for _, e := range embeds {
		for _, x := range e {
			sum += float64(x) * float64(x)
			n++
		}
	}
	return math.Sqrt(sum / float64(max(n, 1)))
}

// testPNG encodes a w×h image whose pixels pixel gives.
func testPNG(t *testing.T, w, h int, pixel func(x, y int) color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, pixel(x, y))
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestVisionProjectorEncodes: mtmd loads the written vision projector beside each 64-wide text
// model and encodes a PNG into ImageTokens() = (32/8)² = 16 embeddings, whatever the image's
// own size (mtmd resizes and pads it to 32×32, one embedding per 8×8 patch, no class token):
// finite, not all alike, the same for the same image and different for another one.
func TestVisionProjectorEncodes(t *testing.T) {
	opts := gguftest.VisionProjectorOptions{}
	proj := filepath.Join(t.TempDir(), "mmproj-vision.gguf")
	if err := gguftest.WriteVisionProjector(proj, opts); err != nil {
		t.Fatal(err)
	}
	gradient := testPNG(t, 48, 40, func(x, y int) color.RGBA {
		return color.RGBA{uint8(x * 5), uint8(y * 6), 128, 255}
	})
	checker := testPNG(t, 32, 32, func(x, y int) color.RGBA {
		if (x/4+y/4)%2 == 0 {
			return color.RGBA{255, 255, 255, 255}
		}
		return color.RGBA{0, 0, 40, 255}
	})
	for _, m := range mediaTextModels(t) {
		mctx := openProjector(t, m, proj)
		a := mediaEmbeddings(t, m, mctx, gradient)
		if len(a) != opts.ImageTokens() || len(a) != 16 {
			t.Fatalf("%s: %d image embeddings, want %d", m.name, len(a), opts.ImageTokens())
		}
		if spread(a) == 0 {
			t.Errorf("%s: every embedding value is the same", m.name)
		}
		t.Logf("%s: %d embeddings, rms %.3f, spread %.3f", m.name, len(a), rms(a), spread(a))
		if again := mediaEmbeddings(t, m, mctx, gradient); !sameEmbeddings(a, again) {
			t.Errorf("%s: the same image encoded differently", m.name)
		}
		b := mediaEmbeddings(t, m, mctx, checker)
		if len(b) != 16 {
			t.Fatalf("%s: %d embeddings for the second image", m.name, len(b))
		}
		if sameEmbeddings(a, b) {
			t.Errorf("%s: two different images gave the same embeddings", m.name)
		}
	}
}

// testWAV encodes seconds of a sine of freq Hz at amplitude amp (of full scale) as 16-bit
// mono PCM WAV at rate Hz.
func testWAV(seconds, freq, amp float64, rate int) []byte {
	n := int(seconds * float64(rate))
	le := binary.LittleEndian
	b := []byte("RIFF")
	b = le.AppendUint32(b, uint32(36+2*n))
	b = append(b, "WAVEfmt "...)
	b = le.AppendUint32(b, 16)             // the fmt chunk's size
	b = le.AppendUint16(b, 1)              // PCM
	b = le.AppendUint16(b, 1)              // mono
	b = le.AppendUint32(b, uint32(rate))   // samples a second
	b = le.AppendUint32(b, uint32(2*rate)) // bytes a second
	b = le.AppendUint16(b, 2)              // bytes a frame
	b = le.AppendUint16(b, 16)             // bits a sample
	b = append(b, "data"...)
	b = le.AppendUint32(b, uint32(2*n))
	for i := range n {
		x := amp * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))
		b = le.AppendUint16(b, uint16(int16(x*math.MaxInt16)))
	}
	return b
}

// TestAudioProjectorEncodes: mtmd loads the written audio projector beside each 64-wide text
// model and encodes a short WAV clip into WindowTokens() = 750/15 = 50 embeddings: mtmd pads
// a clip to at least 31 s and cuts its mel (a frame every 10 ms) into whole 3000-frame
// windows, so a clip of up to 60 s is one window, 1500 positions after Whisper's
// convolutions, 750 after Voxtral's pooling, 50 after stacking 15; a 61 s clip (not checked
// with -short) is two windows, two chunks. The embeddings are finite, not all alike, the same
// for the same clip and different for another one (a 22.05 kHz clip mtmd resamples to 16 kHz).
func TestAudioProjectorEncodes(t *testing.T) {
	opts := gguftest.AudioProjectorOptions{}
	proj := filepath.Join(t.TempDir(), "mmproj-audio.gguf")
	if err := gguftest.WriteAudioProjector(proj, opts); err != nil {
		t.Fatal(err)
	}
	low := testWAV(1.5, 440, 0.5, 16000)
	high := testWAV(1, 2500, 0.8, 22050)
	long := testWAV(61, 300, 0.5, 16000)
	for i, m := range mediaTextModels(t) {
		mctx := openProjector(t, m, proj)
		a := mediaEmbeddings(t, m, mctx, low)
		if want := opts.WindowTokens(); len(a) != want || want != 50 {
			t.Fatalf("%s: %d audio embeddings, want %d", m.name, len(a), want)
		}
		if spread(a) == 0 {
			t.Errorf("%s: every embedding value is the same", m.name)
		}
		t.Logf("%s: %d embeddings, rms %.3f, spread %.3f", m.name, len(a), rms(a), spread(a))
		if again := mediaEmbeddings(t, m, mctx, low); !sameEmbeddings(a, again) {
			t.Errorf("%s: the same clip encoded differently", m.name)
		}
		b := mediaEmbeddings(t, m, mctx, high)
		if len(b) != len(a) {
			t.Fatalf("%s: %d embeddings for the second clip, want %d", m.name, len(b), len(a))
		}
		if sameEmbeddings(a, b) {
			t.Errorf("%s: two different clips gave the same embeddings", m.name)
		}
		// The windowing is mtmd's, whatever the text model; a minute of audio is the slowest
		// part of the test (mtmd's four threads crawl on a busy machine), so -short leaves it.
		if i == 0 && !testing.Short() {
			if got := mediaEmbeddings(t, m, mctx, long); len(got) != 2*opts.WindowTokens() {
				t.Errorf("%s: %d embeddings for a 61 s clip, want two windows of %d", m.name, len(got), opts.WindowTokens())
			}
		}
	}
}

// TestProjectorOfAnotherWidth: mtmd refuses a projector written for a 128-wide text model
// beside a 64-wide one (the engine relies on this to fail the load).
func TestProjectorOfAnotherWidth(t *testing.T) {
	dir := t.TempDir()
	vision := filepath.Join(dir, "mmproj-vision-128.gguf")
	if err := gguftest.WriteVisionProjector(vision, gguftest.VisionProjectorOptions{TextEmbd: 128}); err != nil {
		t.Fatal(err)
	}
	audio := filepath.Join(dir, "mmproj-audio-128.gguf")
	if err := gguftest.WriteAudioProjector(audio, gguftest.AudioProjectorOptions{TextEmbd: 128}); err != nil {
		t.Fatal(err)
	}
	fits := filepath.Join(dir, "mmproj-vision-64.gguf")
	if err := gguftest.WriteVisionProjector(fits, gguftest.VisionProjectorOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, m := range mediaTextModels(t) {
		openProjector(t, m, fits) // the same file written for 64 loads
		for _, path := range []string{vision, audio} {
			if mctx, err := llama.NewMtmdContext(m.lctx, path); err == nil {
				mctx.Free()
				t.Errorf("%s: %s loaded beside a 64-wide model", m.name, filepath.Base(path))
			}
		}
	}
}
