package media

import (
	"errors"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// fuzzLimits keep each input cheap: small files and images, short clips.
var fuzzLimits = Limits{MaxBytes: 1 << 20, MaxPixels: 1 << 20, MaxGIFFrames: 50, MaxAudioSeconds: 30}

// FuzzDecodeImage: no input panics; a refusal wraps llm.ErrInvalidInput; an accepted image
// has exactly width × height RGB pixels.
func FuzzDecodeImage(f *testing.F) {
	f.Add(encodePNG(f, halfTransparent(3, 2)), "image/png")
	f.Add(craftPNG(f, 10000, 10000, 8, 6, 0), "")
	f.Add([]byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00\x3b"), "image/gif")
	f.Add([]byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), "")
	for _, name := range []string{"src.png", "lossless.webp", "lossy.webp"} {
		f.Add(readFixture(f, name), "")
	}
	f.Fuzz(func(t *testing.T, data []byte, mime string) {
		m, err := DecodeImage(data, mime, fuzzLimits)
		if err != nil {
			if !errors.Is(err, llm.ErrInvalidInput) {
				t.Fatalf("refusal %v does not wrap llm.ErrInvalidInput", err)
			}
			return
		}
		if m.Width <= 0 || m.Height <= 0 || len(m.RGB) != m.Width*m.Height*3 || int64(m.Width*m.Height) > fuzzLimits.MaxPixels {
			t.Fatalf("accepted %d×%d with %d RGB bytes", m.Width, m.Height, len(m.RGB))
		}
	})
}

// FuzzDecodeAudio: no input panics; a refusal wraps llm.ErrInvalidInput; accepted audio is
// whole float32 samples in [-1, 1], within the length limit.
func FuzzDecodeAudio(f *testing.F) {
	f.Add(writeWAV(wavSpec{format: wavPCM, channels: 2, rate: 22050, bits: 24}, sine(500, 2, 440, 22050, 0.5)), "audio/wav")
	f.Add(writeWAV(wavSpec{format: wavFloat, channels: 1, rate: 8000, bits: 32, extensible: true}, sine(300, 1, 440, 8000, 0.5)), "")
	f.Add(wavBytes(wavSpec{format: wavPCM, channels: 1, rate: 16000, bits: 16}, nil, 0xFFFFFFF0), "wav")
	for _, name := range []string{"sine440-24k-mono.mp3", "sine1k-44k-stereo.mp3"} {
		f.Add(readFixture(f, name), "")
	}
	f.Add([]byte("fLaC\x00\x00\x00\x22"), "audio/flac")
	f.Fuzz(func(t *testing.T, data []byte, mime string) {
		m, err := DecodeAudio(data, mime, fuzzLimits)
		if err != nil {
			if !errors.Is(err, llm.ErrInvalidInput) {
				t.Fatalf("refusal %v does not wrap llm.ErrInvalidInput", err)
			}
			return
		}
		if len(m.PCM) == 0 || len(m.PCM)%4 != 0 || Duration(m).Seconds() > float64(fuzzLimits.MaxAudioSeconds)+1 {
			t.Fatalf("accepted %d PCM bytes (%v)", len(m.PCM), Duration(m))
		}
		for i, v := range samples(m) {
			if !(v >= -1 && v <= 1) {
				t.Fatalf("sample %d is %v", i, v)
			}
		}
	})
}
