package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/superfluid/superfluid/runtime/llamacpp"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// The media suite: images and audio in the prompt through the HTTP API next to the engine
// loaded in this process with the same projector, in the same run, each a median over
// o.Repeat runs with its target and a verdict:
//   (a) the time to the first token of an OpenAI chat request with a new image (a data URL
//       PNG, max_tokens 1) vs the engine's own encode + prefill of the same prompt;
//   (b) a transcription (POST /v1/audio/transcriptions, a new WAV clip) vs the engine's
//       encode + prefill + decode of the same prompt and as many tokens;
//   (c) the same image and prompt sent again vs the first time (the prefix cache keys the
//       image's positions by its hash).
// The engine is timed from its Generate call, so its side holds the tokenizing and mtmd's
// preprocessing (resize, mel spectrogram) as the server's does.

// Targets of the media suite.
const (
	mediaEngineTarget = 0.95 // engine time / server time, at least
	mediaWarmTarget   = 0.15 // re-sent image TTFT / new image TTFT, at most
)

// imageQuestion is the text after the image in every image request.
const imageQuestion = "What is in this picture? Answer in one sentence."

// MediaReport is what the media suite measured (its --json form).
type MediaReport struct {
	Model string `json:"model"`
	// Projectors says which projector files ran, and whether the suite wrote them.
	Projectors        string       `json:"projectors"`
	WrittenProjectors bool         `json:"written_projectors"`
	Runs              int          `json:"runs"`
	ImageSide         int          `json:"image_side"`
	AudioSeconds      float64      `json:"audio_seconds"`
	Rows              []MediaRatio `json:"rows"`
}

// MediaRatio is one row: A / B, each run's value of both in Unit.
type MediaRatio struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	// A and B are the runs' values (milliseconds); the ratio is the medians' A / B.
	A       []float64 `json:"a"`
	B       []float64 `json:"b"`
	AMedian float64   `json:"a_median"`
	BMedian float64   `json:"b_median"`
	Ratio   float64   `json:"ratio"`
	Target  float64   `json:"target"`
	// AtMost says the ratio passes at or below Target (else at or above it).
	AtMost  bool   `json:"at_most"`
	Verdict string `json:"verdict"`
	Note    string `json:"note,omitempty"`
	// PromptTokensA and PromptTokensB are each run's prompt tokens on either side, the
	// media's positions included (the same when both ran the same prompt).
	PromptTokensA []int `json:"prompt_tokens_a,omitempty"`
	PromptTokensB []int `json:"prompt_tokens_b,omitempty"`
	// CachedTokensA is each run's prompt tokens the server found cached on side A (the
	// re-sent image's row).
	CachedTokensA []int `json:"cached_tokens_a,omitempty"`
	// EngineDecode is each run's time for llama.cpp's own decoder (stb, as llama-server) to
	// decode the PNG (row (a)); RatioWithDecode is A / B with it added to A's median: the
	// ratio a llama-server user would see, where Ratio is the strict one.
	EngineDecode    []float64 `json:"engine_decode_ms,omitempty"`
	RatioWithDecode float64   `json:"ratio_with_decode,omitempty"`
}

// mediaRow is a row being measured: a ratio, and the prompt tokens of each side's runs.
type mediaRow struct {
	speedRow
	tokensA, tokensB, cachedA []int
	decode                    []float64
}

// samePrompts adds to the note when the two sides' prompts differ in length: then they did
// not run the same prompt, and the ratio compares different work.
func (r *mediaRow) samePrompts() {
	if !slices.Equal(r.tokensA, r.tokensB) {
		r.note += fmt.Sprintf("; the prompts differ: %v prompt tokens vs %v", r.tokensA, r.tokensB)
	}
}

// benchMedia runs the media suite.
func benchMedia(model string, o Options, w io.Writer) error {
	r, err := measureMedia(model, o)
	if err != nil {
		return err
	}
	if o.JSON {
		return writeMediaJSON(w, r)
	}
	writeMedia(w, r)
	return nil
}

func writeMediaJSON(w io.Writer, r *MediaReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeMedia prints the report as a table.
func writeMedia(w io.Writer, r *MediaReport) {
	fmt.Fprintf(w, "model %s, %d runs each, medians [min]; %s\n", r.Model, r.Runs, r.Projectors)
	fmt.Fprintf(w, "images %d×%d PNG; clips %g s of 16-bit 16 kHz WAV; each row is A vs B, its ratio A / B\n", r.ImageSide, r.ImageSide, r.AudioSeconds)
	rows := make([]speedRow, len(r.Rows))
	for i, m := range r.Rows {
		rows[i] = speedRow{name: m.Name, unit: m.Unit, base: m.B, with: m.A, lowerWins: m.AtMost, target: m.Target, note: m.Note, unavailable: m.Verdict == "n/a"}
	}
	printRatios(w, "B", "A", rows)
}

// measureMedia runs the suite's measurements.
func measureMedia(model string, o Options) (*MediaReport, error) {
	dir, err := mediaTempDir(o)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	proj, err := mediaProjectorsFor(model, o.Projector, dir)
	if err != nil {
		return nil, err
	}
	r := &MediaReport{Model: model, Projectors: proj.about, WrittenProjectors: proj.written, Runs: o.Repeat,
		ImageSide: orDefault(o.ImageSide, 512), AudioSeconds: o.AudioSeconds}
	if r.AudioSeconds <= 0 {
		r.AudioSeconds = 10
	}
	cold := missingRow(imageRowName, mediaEngineTarget, false, "the projector has no vision encoder")
	warm := missingRow(warmRowName, mediaWarmTarget, true, "the projector has no vision encoder")
	if proj.vision != "" {
		if cold, warm, err = imageRows(model, proj.vision, r.ImageSide, o); err != nil {
			return nil, fmt.Errorf("images: %w", err)
		}
	}
	audio := missingRow(transcribeRowName(r.AudioSeconds), mediaEngineTarget, false, "the projector has no audio encoder")
	if proj.audio != "" {
		if audio, err = transcriptionRow(model, proj.audio, r.AudioSeconds, o); err != nil {
			return nil, fmt.Errorf("audio: %w", err)
		}
	}
	for _, row := range []mediaRow{cold, audio, warm} {
		am, _ := medianMin(row.with)
		bm, _ := medianMin(row.base)
		r.Rows = append(r.Rows, MediaRatio{EngineDecode: row.decode, RatioWithDecode: decodeRatio(row), Name: row.name, Unit: row.unit, A: orEmpty(row.with), B: orEmpty(row.base), AMedian: am, BMedian: bm,
			Ratio: row.ratio(), Target: row.target, AtMost: row.lowerWins, Verdict: row.verdict(), Note: row.note,
			PromptTokensA: row.tokensA, PromptTokensB: row.tokensB, CachedTokensA: row.cachedA})
	}
	return r, nil
}

const (
	imageRowName = "(a) TTFT, new image: engine vs server"
	warmRowName  = "(c) TTFT, image re-sent vs new (server)"
)

func transcribeRowName(seconds float64) string {
	return fmt.Sprintf("(b) transcription, %g s clip: engine vs server", seconds)
}

// missingRow is a row that could not be measured, and why.
func missingRow(name string, target float64, atMost bool, why string) mediaRow {
	return mediaRow{speedRow: speedRow{name: name, unit: "ms", target: target, lowerWins: atMost, unavailable: true, note: "not available: " + why}}
}

func orEmpty(xs []float64) []float64 {
	if xs == nil {
		return []float64{}
	}
	return xs
}

// imageRows measures (a) and (c) on the model with the vision projector: each run sends a new
// image and question (cold), the same again (warm), and runs the engine's prefill of the same
// prompt and image.
func imageRows(model, projector string, side int, o Options) (cold, warm mediaRow, err error) {
	cold = mediaRow{speedRow: speedRow{name: imageRowName, unit: "ms", target: mediaEngineTarget}}
	warm = mediaRow{speedRow: speedRow{name: warmRowName, unit: "ms", target: mediaWarmTarget, lowerWins: true}}
	direct, err := llamacpp.Load(llamacpp.Options{ModelPath: model, ProjectorPath: projector, ContextLength: o.ContextLength, Parallel: 1, Threads: o.Threads})
	if err != nil {
		return cold, warm, err
	}
	defer direct.Close()
	api, stop, err := serve(o, ServeOptions{Model: model, Parallel: 1, Threads: direct.Info().Threads, Projector: projector})
	if err != nil {
		return cold, warm, err
	}
	defer stop()
	prompt, addSpecial, err := enginePrompt(model, imageQuestion, 1)
	if err != nil {
		return cold, warm, err
	}
	var prefill []float64
	// Run 0 warms both up (first graphs, first encoder run) and is not counted.
	for run := range o.Repeat + 1 {
		png, img, err := benchImage(side, run)
		if err != nil {
			return cold, warm, err
		}
		body := func() map[string]any {
			return map[string]any{"max_tokens": 1, "ignore_eos": true, "temperature": 0, "messages": []map[string]any{{
				"role": "user", "content": []map[string]any{
					{"type": "image_url", "image_url": map[string]string{"url": dataURL("image/png", png)}},
					{"type": "text", "text": imageQuestion},
				}}}}
		}
		var first, again, eng sample
		var done llm.Done
		var decode time.Duration
		// The engine goes first on odd runs, second on even ones: a machine that slows down
		// or speeds up during the runs favours neither side.
		for turn := range 2 {
			if turn == run%2 {
				if first, err = api.stream(body()); err != nil {
					return cold, warm, fmt.Errorf("new image: %w", err)
				}
				if again, err = api.stream(body()); err != nil {
					return cold, warm, fmt.Errorf("re-sent image: %w", err)
				}
				continue
			}
			if decode, err = engineImageDecode(direct, png, img); err != nil {
				return cold, warm, err
			}
			eng, done, err = engineGenerate(direct, &llm.Request{Prompt: prompt, AddSpecial: addSpecial, MaxTokens: 1, IgnoreEOS: true,
				Media: []llm.Media{img}, MediaMarker: benchMarker, Sampling: greedySampling()})
			if err != nil {
				return cold, warm, fmt.Errorf("engine: %w", err)
			}
		}
		if run == 0 {
			continue
		}
		cold.base, cold.with = append(cold.base, ms(first.ttft())), append(cold.with, ms(eng.ttft()))
		cold.decode = append(cold.decode, ms(decode))
		warm.base, warm.with = append(warm.base, ms(first.ttft())), append(warm.with, ms(again.ttft()))
		cold.tokensA, cold.tokensB = append(cold.tokensA, done.Usage.PromptTokens), append(cold.tokensB, first.promptTokens)
		warm.tokensA, warm.tokensB = append(warm.tokensA, again.promptTokens), append(warm.tokensB, first.promptTokens)
		warm.cachedA, prefill = append(warm.cachedA, again.cached), append(prefill, ms(done.Timings.Prefill))
	}
	pm, _ := medianMin(prefill)
	dm, _ := medianMin(cold.decode)
	cold.note = fmt.Sprintf("%v prompt tokens (the image's positions included); of the engine's time, its own Timings.Prefill (encode + prefill on its loop) %.1f ms; "+
		"llama.cpp's own PNG decode (stb, as llama-server) %.1f ms more, making the ratio %.2fx",
		cold.tokensB, pm, dm, decodeRatio(cold))
	cold.samePrompts()
	warm.note = fmt.Sprintf("re-sent: cached tokens %v", warm.cachedA)
	warm.samePrompts()
	return cold, warm, nil
}

// transcriptionRow measures (b) on the model with the audio projector: each run transcribes a
// new clip through the API (response_format json) and runs the engine on the same prompt and
// clip, decoding as many tokens as the server did.
func transcriptionRow(model, projector string, seconds float64, o Options) (mediaRow, error) {
	row := mediaRow{speedRow: speedRow{name: transcribeRowName(seconds), unit: "ms", target: mediaEngineTarget}}
	direct, err := llamacpp.Load(llamacpp.Options{ModelPath: model, ProjectorPath: projector, ContextLength: o.ContextLength, Parallel: 1, Threads: o.Threads})
	if err != nil {
		return row, err
	}
	defer direct.Close()
	api, stop, err := serve(o, ServeOptions{Model: model, Parallel: 1, Threads: direct.Info().Threads, Projector: projector})
	if err != nil {
		return row, err
	}
	defer stop()
	prompt, addSpecial, err := enginePrompt(model, core.TranscribeInstruction(false, "", ""), 1)
	if err != nil {
		return row, err
	}
	var outputs []int
	for run := range o.Repeat + 1 { // run 0 warms up
		wav, clip := benchClip(seconds, run)
		t, err := api.transcribe(wav)
		if err != nil {
			return row, err
		}
		// As many tokens as the server generated, whatever the model would stop at.
		eng, done, err := engineGenerate(direct, &llm.Request{Prompt: prompt, AddSpecial: addSpecial, MaxTokens: max(t.outputTokens, 1), IgnoreEOS: true,
			Media: []llm.Media{clip}, MediaMarker: benchMarker, Sampling: greedySampling()})
		if err != nil {
			return row, fmt.Errorf("engine: %w", err)
		}
		if run == 0 {
			continue
		}
		row.base, row.with = append(row.base, ms(t.elapsed)), append(row.with, ms(eng.end.Sub(eng.start)))
		row.tokensA, row.tokensB = append(row.tokensA, done.Usage.PromptTokens), append(row.tokensB, t.inputTokens)
		outputs = append(outputs, t.outputTokens)
	}
	row.note = fmt.Sprintf("%v prompt tokens (the clip's positions included); tokens generated %v", row.tokensB, outputs)
	row.samePrompts()
	return row, nil
}

// engineImageDecode times llama.cpp's own decoder on the PNG file bytes, and checks it gives the
// pixels the server's decoder gave (else the rows would compare different images).
func engineImageDecode(e *llamacpp.Engine, png []byte, want llm.Media) (time.Duration, error) {
	start := time.Now()
	got, err := e.DecodeImageFile(png)
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("engine decode: %w", err)
	}
	if got.Width != want.Width || got.Height != want.Height || !bytes.Equal(got.RGB, want.RGB) {
		return 0, fmt.Errorf("engine decode: llama.cpp decoded the PNG to other pixels (%d×%d) than the server's decoder (%d×%d)", got.Width, got.Height, want.Width, want.Height)
	}
	return took, nil
}

// decodeRatio is row's ratio with the engine's decode added to each engine run.
func decodeRatio(row mediaRow) float64 {
	b, _ := medianMin(row.base)
	if len(row.decode) != len(row.with) || b <= 0 {
		return 0
	}
	sums := make([]float64, len(row.with))
	for i := range sums {
		sums[i] = row.with[i] + row.decode[i]
	}
	m, _ := medianMin(sums)
	return m / b
}

func greedySampling() llm.Sampling {
	zero := 0.0
	return llm.Sampling{Temperature: &zero}
}
