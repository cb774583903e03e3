package app

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// toneWAV is secs seconds of a hz tone, 16 kHz mono 16-bit PCM.
func toneWAV(hz float64, secs int) []byte {
	n := secs * 16000
	var b bytes.Buffer
	b.WriteString("RIFF")
	_ = binary.Write(&b, binary.LittleEndian, uint32(36+2*n))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(16000), uint32(32000), uint16(2), uint16(16)} {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data")
	_ = binary.Write(&b, binary.LittleEndian, uint32(2*n))
	for i := range n {
		_ = binary.Write(&b, binary.LittleEndian, int16(12000*math.Sin(2*math.Pi*hz*float64(i)/16000)))
	}
	return b.Bytes()
}

func speech(data []byte, model string) openai.AudioTranscriptionNewParams {
	return openai.AudioTranscriptionNewParams{File: openai.File(bytes.NewReader(data), "speech.wav", "audio/wav"), Model: model}
}

// TestTranscriptionEndToEnd: on the real engine, a model with a (random-weight) audio projector
// transcribes a 40 s clip in two windows through openai-go in every response_format — json
// and verbose_json with Audio.Transcriptions.New, text, srt and vtt as text, the stream — and
// translates; the clip's encoder positions count in the usage, another clip gives another
// transcript, and a model without an audio projector is a 400 unsupported_model.
func TestTranscriptionEndToEnd(t *testing.T) {
	srv, vision, audio := mediaModels(t)
	client := sdk(srv)
	ctx := context.Background()
	clip := toneWAV(440, 40)

	tr, err := client.Audio.Transcriptions.New(ctx, speech(clip, audio))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(tr.Text) == "" || tr.Usage.Type != "tokens" || tr.Usage.InputTokens < 100 || tr.Usage.OutputTokens == 0 {
		t.Fatalf("json: %+v", tr)
	}
	t.Logf("transcript %q, usage %d in %d out", tr.Text, tr.Usage.InputTokens, tr.Usage.OutputTokens)
	other, err := client.Audio.Transcriptions.New(ctx, speech(toneWAV(1800, 40), audio))
	if err != nil || other.Text == tr.Text {
		t.Fatalf("another clip gave %q (%v); the first %q", other.Text, err, tr.Text)
	}

	p := speech(clip, audio)
	p.ResponseFormat = openai.AudioResponseFormatVerboseJSON
	verbose, err := client.Audio.Transcriptions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	v := verbose.AsTranscriptionVerbose()
	if v.Duration != 40 || len(v.Segments) != 2 || v.Segments[0].Start != 0 || v.Segments[1].Start != v.Segments[0].End ||
		v.Segments[1].End != 40 || v.Segments[0].End > 30 || v.Text != tr.Text {
		t.Fatalf("verbose_json: %+v; json's text %q", v, tr.Text)
	}

	cue := regexp.MustCompile(`(\d\d):(\d\d):(\d\d)[,.](\d\d\d) --> (\d\d):(\d\d):(\d\d)[,.](\d\d\d)\n\S`)
	for _, format := range []openai.AudioResponseFormat{openai.AudioResponseFormatText, openai.AudioResponseFormatSRT, openai.AudioResponseFormatVTT} {
		p := speech(clip, audio)
		p.ResponseFormat = format
		var out string
		if err := client.Post(ctx, "audio/transcriptions", p, &out); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		switch format {
		case openai.AudioResponseFormatText:
			if out != tr.Text+"\n" {
				t.Fatalf("text: %q, json's %q", out, tr.Text)
			}
		default:
			if n := len(cue.FindAllString(out, -1)); n == 0 || n > 2 || (format == openai.AudioResponseFormatVTT) != strings.HasPrefix(out, "WEBVTT\n") {
				t.Fatalf("%s: %d cues in %q", format, n, out)
			}
		}
	}

	stream := client.Audio.Transcriptions.NewStreaming(ctx, speech(clip, audio))
	var deltas, done string
	for stream.Next() {
		switch ev := stream.Current().AsAny().(type) {
		case openai.TranscriptionTextDeltaEvent:
			deltas += ev.Delta
		case openai.TranscriptionTextDoneEvent:
			done = ev.Text
		}
	}
	if err := stream.Err(); err != nil || done != tr.Text || deltas != done {
		t.Fatalf("stream: %v; deltas %q, done %q, json %q", err, deltas, done, tr.Text)
	}

	tl, err := client.Audio.Translations.New(ctx, openai.AudioTranslationNewParams{
		File: openai.File(bytes.NewReader(toneWAV(440, 5)), "speech.wav", "audio/wav"), Model: audio,
	})
	if err != nil || strings.TrimSpace(tl.Text) == "" {
		t.Fatalf("translation: %v %+v", err, tl)
	}

	_, err = client.Audio.Transcriptions.New(ctx, speech(toneWAV(440, 2), vision))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "unsupported_model" {
		t.Fatalf("a vision model: %v", err)
	}
}
