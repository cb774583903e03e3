package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// What the media suite sends: its projectors, test images and audio clips, and the prompt the
// engine gets for the same request the server renders.

// mediaProjectors are the projector files of one media run: one path for both kinds when the
// bench was given a projector (a kind it lacks is "").
type mediaProjectors struct {
	vision, audio string
	// written says the files are random-weight projectors the suite wrote for the model.
	written bool
	// about says where they come from, for the report.
	about string
}

// Shapes of the projectors the suite writes: a 224-pixel image in 14-pixel patches is 256
// positions, as in PaliGemma; the audio encoder is gguftest's (one window of up to 60 s).
const (
	writtenImageSize = 224
	writtenPatchSize = 14
)

// mediaProjectorsFor is the projector the bench was given, or random-weight vision and audio
// projectors sized for the model (its input width) written into dir.
func mediaProjectorsFor(model, given, dir string) (mediaProjectors, error) {
	if given != "" {
		f, err := gguf.ReadFile(given)
		if err != nil {
			return mediaProjectors{}, fmt.Errorf("projector %s: %w", given, err)
		}
		facts, err := f.Projector()
		if err != nil {
			return mediaProjectors{}, fmt.Errorf("projector %s: %w", given, err)
		}
		p := mediaProjectors{about: "projector " + given + " (--mmproj)"}
		if facts.Vision {
			p.vision = given
		}
		if facts.Audio {
			p.audio = given
		}
		return p, nil
	}
	f, err := gguf.ReadFile(model)
	if err != nil {
		return mediaProjectors{}, fmt.Errorf("model %s: %w", model, err)
	}
	width := f.InputWidth()
	if width <= 0 {
		return mediaProjectors{}, fmt.Errorf("model %s: no %s.embedding_length to size a projector for; give one with --mmproj", model, f.Architecture())
	}
	p := mediaProjectors{vision: filepath.Join(dir, "mmproj-bench-vision.gguf"), audio: filepath.Join(dir, "mmproj-bench-audio.gguf"), written: true}
	vopts := gguftest.VisionProjectorOptions{TextEmbd: width, ImageSize: writtenImageSize, PatchSize: writtenPatchSize}
	if err := gguftest.WriteVisionProjector(p.vision, vopts); err != nil {
		return p, fmt.Errorf("write the vision projector: %w", err)
	}
	aopts := gguftest.AudioProjectorOptions{TextEmbd: width}
	if err := gguftest.WriteAudioProjector(p.audio, aopts); err != nil {
		return p, fmt.Errorf("write the audio projector: %w", err)
	}
	p.about = fmt.Sprintf("no --mmproj: random-weight projectors written for the model's width %d in %s "+
		"(a CLIP tower, %d positions an image; a Whisper-style encoder, %d positions a clip)", width, dir, vopts.ImageTokens(), aopts.WindowTokens())
	return p, nil
}

// mediaTempDir is a new folder for the written projectors under o.TempDir ("": the system's).
func mediaTempDir(o Options) (string, error) {
	return os.MkdirTemp(o.TempDir, "superfluid-bench-media-")
}

// benchImage is a side×side image, different for every seed: a gradient with photo-like noise
// (PNG compresses it about as well as a photograph), as the PNG a client sends and as the RGB
// the server decodes it to.
func benchImage(side, seed int) (png []byte, media llm.Media, err error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6d65646961))
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	rgb := make([]byte, 0, side*side*3)
	for y := range side {
		for x := range side {
			c := [3]byte{
				byte((x*255/side + seed*37 + rng.IntN(24)) % 256),
				byte((y*255/side + seed*11 + rng.IntN(24)) % 256),
				byte(((x+y)*128/side + seed*5 + rng.IntN(24)) % 256),
			}
			i := img.PixOffset(x, y)
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c[0], c[1], c[2], 255
			rgb = append(rgb, c[:]...)
		}
	}
	png, err = encodePNG(img)
	return png, llm.Media{Kind: llm.MediaImage, Width: side, Height: side, RGB: rgb, Hash: contentHash(rgb)}, err
}

func encodePNG(img image.Image) ([]byte, error) {
	var b bytes.Buffer
	err := png.Encode(&b, img)
	return b.Bytes(), err
}

// dataURL is data as a base64 data URL of type mime.
func dataURL(mime string, data []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// benchClip is seconds of a tone that glides and pulses like speech, different for every seed,
// as a 16-bit mono WAV at llm.AudioSampleRate and as the float PCM the server decodes it to.
func benchClip(seconds float64, seed int) (wav []byte, media llm.Media) {
	n := int(seconds * llm.AudioSampleRate)
	le := binary.LittleEndian
	wav = append([]byte("RIFF"), le.AppendUint32(nil, uint32(36+2*n))...)
	wav = append(wav, "WAVEfmt "...)
	for _, v := range []uint32{16, 1 | 1<<16, llm.AudioSampleRate, 2 * llm.AudioSampleRate, 2 | 16<<16} {
		wav = le.AppendUint32(wav, v) // chunk size; PCM, mono; rate; bytes a second; bytes a frame, bits
	}
	wav = append(append(wav, "data"...), le.AppendUint32(nil, uint32(2*n))...)
	pcm := make([]byte, 0, 4*n)
	base := 150 + 20*float64(seed%10)
	phase := 0.0
	for i := range n {
		t := float64(i) / llm.AudioSampleRate
		freq := base * (1 + 0.3*math.Sin(2*math.Pi*0.7*t))
		phase += 2 * math.Pi * freq / llm.AudioSampleRate
		envelope := 0.5 + 0.5*math.Sin(2*math.Pi*3*t) // syllables, three a second
		s := int16(0.6 * envelope * math.Sin(phase) * math.MaxInt16)
		wav = le.AppendUint16(wav, uint16(s))
		pcm = le.AppendUint32(pcm, math.Float32bits(float32(s)/32768))
	}
	return wav, llm.Media{Kind: llm.MediaAudio, PCM: pcm, Hash: contentHash(pcm)}
}

func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// benchMarker stands where the media go in the engine's prompt (the server picks its own).
const benchMarker = "<__media_bench0123456789__>"

// enginePrompt renders one user turn, the media first and then text, through the model's chat
// template as the server renders it (core.DescribeModel reads the template and special
// tokens), with the engine's marker where the media go. It reports whether the tokenizer
// should add BOS (the template did not write it).
func enginePrompt(model, text string, media int) (prompt string, addSpecial bool, err error) {
	m := core.DescribeModel("bench", model, 0)
	msg := chat.Message{Role: "user", Content: strings.Repeat(benchMarker, media) + text}
	prompt, err = m.Template.Render([]chat.Message{msg}, chat.Options{BOSToken: m.BOS, EOSToken: m.EOS, AddGenerationPrompt: true})
	if err != nil {
		return "", false, fmt.Errorf("render the chat template: %w", err)
	}
	if got := strings.Count(prompt, benchMarker); got != media {
		return "", false, fmt.Errorf("the chat template rendered the media marker %d times for %d media", got, media)
	}
	return prompt, m.BOS == "" || !strings.HasPrefix(prompt, m.BOS), nil
}
