package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/media"
	"github.com/superfluid/superfluid/server/core/qos"
)

// Speech to text on an audio-input model (one whose projector hears): the file is decoded,
// split into windows of at most 30 s (the encoders' span), and each window is one generation
// through the model's chat template, the clip followed by an instruction to transcribe (or
// translate into English). The windows' texts make the transcript's segments, timed by their
// windows. The whole is one request: one record, its usage the windows' sum.

// TranscribeRequest is an audio file to transcribe or translate.
type TranscribeRequest struct {
	ID       string
	Endpoint string
	Model    string
	Stream   bool
	// Audio is the file's bytes (WAV, MP3 or FLAC); MIME its declared type ("" sniffs it).
	Audio []byte
	MIME  string
	// Language is the speech's language (ISO-639-1, e.g. "de"); "" lets the model tell.
	Language string
	// Prompt is text that comes before the audio or spells its names: context for the model.
	Prompt string
	// Translate asks for English whatever the language spoken.
	Translate bool
	// Temperature is the sampling temperature; nil is 0 (the most likely words).
	Temperature *float64
	QoS         qos.Class
}

// Transcript is the text of an audio file, in segments.
type Transcript struct {
	Model *Model
	// Text is the whole transcript: the segments' texts joined by spaces.
	Text string
	// Language is what the request named (English for a translation); "" when it named none.
	Language string
	Duration time.Duration
	Segments []Segment
	Usage    llm.Usage

	adapters []llm.AdapterRef // what the windows ran with, for the record
	done     llm.Done         // the windows' ends together, for the record (windowsDone)
}

// Segment is the text of one window of the audio.
type Segment struct {
	ID         int
	Start, End time.Duration
	Text       string
	// Tokens is how many tokens the model generated for it.
	Tokens int
}

// AudioFileError refuses the file itself: it cannot be decoded as audio, or it is over a
// limit (TooLarge, which the route answers 413).
type AudioFileError struct {
	Err      error
	TooLarge bool
}

func (e *AudioFileError) Error() string {
	if e.TooLarge {
		return e.Err.Error()
	}
	return "the file cannot be decoded as audio: " + e.Err.Error()
}

func (e *AudioFileError) Unwrap() error { return e.Err }

// Bounds of one window's generation.
const (
	transcribeWindow = 30 * llm.AudioSampleRate // samples: the longest window
	windowTokens     = 512                      // the cap of one window's text
)

// AudioFileLimit is the largest audio file a transcription takes, in bytes (--media-max-bytes).
func (s *Service) AudioFileLimit() int64 {
	if n := s.cfg.Media.MaxBytes; n > 0 {
		return n
	}
	return media.DefaultLimits().MaxBytes
}

// Transcribe turns req's audio into text on req's model, which must take audio input (else
// llm.ErrUnsupportedModel). delta, when set, receives the transcript's text as it is generated:
// its pieces put together are Transcript.Text. The request is recorded, failed or not.
func (s *Service) Transcribe(ctx context.Context, req *TranscribeRequest, delta func(text string) error) (*Transcript, error) {
	ctx = begin(ctx, Scheduling{QoS: req.QoS}, qos.Interactive, req.Stream)
	var out *Transcript
	_, err := s.serve(ctx, recordKey{req.ID, req.Endpoint, req.Model, req.Stream}, func(ctx context.Context, m *Model) (*Result, error) {
		t, err := s.transcribe(ctx, m, req, delta)
		out = t
		if t == nil {
			return nil, err
		}
		done := t.done
		done.Usage = t.Usage
		res := &Result{Model: m, Choices: []llm.Done{done}, Adapters: t.adapters}
		return res, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Service) transcribe(ctx context.Context, m *Model, req *TranscribeRequest, delta func(string) error) (*Transcript, error) {
	if _, audio := m.Modalities(); !audio || m.Requests != nil {
		return nil, fmt.Errorf("%w: the model %s does not take audio (it has no audio projector), so it cannot transcribe; use an audio-input model",
			llm.ErrUnsupportedModel, m.ID)
	}
	clip, err := media.DecodeAudio(req.Audio, req.MIME, s.cfg.Media)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, &AudioFileError{Err: err, TooLarge: errors.Is(err, media.ErrTooLarge)}
	}
	t := &Transcript{Model: m, Language: req.Language, Duration: media.Duration(clip)}
	if req.Translate {
		t.Language = "english"
	}
	text := &spacer{emit: delta}
	for i, w := range splitWindows(clip.PCM) {
		creq := windowRequest(req, m.ID, clip.PCM[4*w[0]:4*w[1]])
		var reply Reply
		text.startWindow()
		res, err := s.chat(ctx, m, creq, func(_ int, ev llm.Event) error {
			reply.Add(ev)
			return text.add(ev.Text)
		})
		if res != nil && len(res.Choices) > 0 {
			t.adapters = res.Adapters
			t.done = windowsDone(t.done, res.Choices[0])
			u := res.Usage()
			t.Usage.PromptTokens += u.PromptTokens
			t.Usage.CachedTokens += u.CachedTokens
			t.Usage.CompletionTokens += u.CompletionTokens
		}
		if err != nil {
			return t, err
		}
		seg := Segment{ID: i, Start: samplesToDuration(w[0]), End: samplesToDuration(w[1]), Text: strings.TrimSpace(reply.Content())}
		if len(res.Choices) > 0 {
			seg.Tokens = res.Choices[0].Usage.CompletionTokens
		}
		t.Segments = append(t.Segments, seg)
	}
	texts := make([]string, 0, len(t.Segments))
	for _, seg := range t.Segments {
		if seg.Text != "" {
			texts = append(texts, seg.Text)
		}
	}
	t.Text = strings.Join(texts, " ")
	return t, nil
}

// windowsDone adds one window's end to the windows' so far: their times summed, the last lane,
// and "length" once any window's text was cut at its cap (the transcript then misses words).
func windowsDone(sum, d llm.Done) llm.Done {
	sum.Timings.Queue += d.Timings.Queue
	sum.Timings.Prefill += d.Timings.Prefill
	sum.Timings.Decode += d.Timings.Decode
	sum.Lane, sum.RestoredTokens = d.Lane, sum.RestoredTokens+d.RestoredTokens
	if sum.FinishReason != "length" {
		sum.FinishReason = d.FinishReason
	}
	return sum
}

// TranscribeInstruction is the text a transcription (or, with translate, a translation) puts
// after the clip; the media bench renders the same turn.
func TranscribeInstruction(translate bool, language, prompt string) string {
	var lines []string
	if translate {
		lines = append(lines, "Translate the audio into English.")
	} else {
		lines = append(lines, "Transcribe the audio exactly.")
	}
	if language != "" {
		lines = append(lines, "The speech is in "+languageName(language)+".")
	}
	if prompt != "" {
		lines = append(lines, "Context (what comes before it, and how to spell its names): "+prompt)
	}
	lines = append(lines, "Reply with the text only.")
	return strings.Join(lines, "\n")
}

// windowRequest is the chat turn that transcribes one window (pcm: little-endian float32
// samples at llm.AudioSampleRate): the clip, then the instruction.
func windowRequest(req *TranscribeRequest, model string, pcm []byte) *ChatRequest {
	part := llm.MediaPart{At: 0, Kind: llm.MediaAudio, MIME: "audio/wav", Data: floatWAV(pcm), Where: "file"}
	creq := &ChatRequest{
		ID: req.ID, Endpoint: req.Endpoint, Stream: req.Stream, Model: model,
		Messages: []chat.Message{{Role: "user", Content: TranscribeInstruction(req.Translate, req.Language, req.Prompt), Media: []llm.MediaPart{part}}},
	}
	temp := 0.0
	if req.Temperature != nil {
		temp = *req.Temperature
	}
	creq.Generation.Sampling.Temperature = &temp
	creq.Generation.MaxTokens = windowTokens
	return creq
}

func samplesToDuration(n int) time.Duration {
	return time.Duration(int64(n) * int64(time.Second) / llm.AudioSampleRate)
}

// spacer passes a transcript's text on as it comes, so that the pieces put together are the
// windows' trimmed texts joined by single spaces, as Transcript.Text is.
type spacer struct {
	emit    func(string) error
	said    bool   // any text sent yet
	started bool   // the current window has sent text
	pending string // whitespace held until more text follows it
}

func (s *spacer) startWindow() { s.started, s.pending = false, "" }

func (s *spacer) add(piece string) error {
	if s.emit == nil || piece == "" {
		return nil
	}
	if !s.started {
		piece = strings.TrimLeftFunc(piece, unicode.IsSpace)
		if piece == "" {
			return nil
		}
	}
	body := strings.TrimRightFunc(piece, unicode.IsSpace)
	if body == "" {
		s.pending += piece
		return nil
	}
	out := s.pending + body
	s.pending = piece[len(body):]
	if !s.started {
		if s.said {
			out = " " + out
		}
		s.started, s.said = true, true
	}
	return s.emit(out)
}
