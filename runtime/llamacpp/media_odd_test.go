package llamacpp

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// pcmClip is a clip of the samples given, hashed as the core hashes one.
func pcmClip(samples []float32) llm.Media {
	pcm := make([]byte, 4*len(samples))
	for i, v := range samples {
		binary.LittleEndian.PutUint32(pcm[4*i:], math.Float32bits(v))
	}
	return llm.Media{Kind: llm.MediaAudio, PCM: pcm, Hash: mediaHash(pcm)}
}

// TestMediaAudioOutOfRange: PCM the core's decoders never make (NaN, ±Inf, far outside
// [-1, 1]) but a request straight to the worker may hold is read as they read it: NaN as
// silence, the rest clipped. Such a clip replies as its clean twin does, instead of failing as
// a broken model (every logit NaN).
func TestMediaAudioOutOfRange(t *testing.T) {
	f := writeMediaFiles(t)[0]
	e := loadMedia(t, f.model, f.audio, 1)
	// One second of a 400 Hz square wave at 0.5 with every 7th sample NaN, every 11th ±Inf
	// and every 13th ±1e30; its clean twin has 0, ±1 and ±1 there.
	odd, clean := make([]float32, llm.AudioSampleRate), make([]float32, llm.AudioSampleRate)
	for i := range odd {
		sign := float32((i/20)%2*2 - 1)
		switch {
		case i%7 == 0:
			odd[i], clean[i] = float32(math.NaN()), 0
		case i%11 == 0:
			odd[i], clean[i] = sign*float32(math.Inf(1)), sign
		case i%13 == 0:
			odd[i], clean[i] = sign*1e30, sign
		default:
			odd[i], clean[i] = sign*0.5, sign*0.5
		}
	}
	got, err := generate(t, e, mediaReq(mediaPrefix, mediaSuffix, 16, pcmClip(odd)))
	if err != nil {
		t.Fatalf("the clip with NaN, infinite and huge samples: %v", err)
	}
	if want := mustGenerate(t, e, mediaReq(mediaPrefix, mediaSuffix, 16, pcmClip(clean))); got.text != want.text {
		t.Errorf("the clip replied %q, its clean twin %q", got.text, want.text)
	}
}
