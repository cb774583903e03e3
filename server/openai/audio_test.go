package openai_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// audioFixture serves "ears", a fake audio-input model (core.Model.Audio) whose n-th
// generation answers "words n.", and "fake", a text-only model.
type audioFixture struct {
	srv    *httptest.Server
	st     *store.Store
	ears   *enginetest.Scripted
	client openai.Client
}

func setupAudio(t *testing.T) *audioFixture {
	t.Helper()
	st := servertest.Store(t)
	tmpl, err := chat.Parse(chatML)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	ears := enginetest.NewScripted(8192, func(*llm.Request) string { return fmt.Sprintf(" words %d. ", n.Add(1)) })
	svc := core.New(core.Config{}, st,
		&core.Model{ID: "ears", Path: "/models/ears.gguf", Engine: ears, Template: tmpl, ContextLength: 8192, Audio: true},
		&core.Model{ID: "fake", Path: "/models/fake.gguf", Engine: enginetest.New(4096, defaultReply), Template: tmpl, ContextLength: 4096},
	)
	srv := httptest.NewServer(server.New(server.Config{}, svc))
	t.Cleanup(srv.Close)
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	return &audioFixture{srv: srv, st: st, ears: ears, client: client}
}

// wav is a 16-bit PCM WAV of a 440 Hz tone at rate for secs seconds, silent wherever silent
// says (in seconds).
func wav(rate int, secs float64, silent ...[2]float64) []byte {
	n := int(secs * float64(rate))
	var data bytes.Buffer
	for i := range n {
		at := float64(i) / float64(rate)
		v := 0.5 * math.Sin(2*math.Pi*440*at)
		for _, s := range silent {
			if at >= s[0] && at < s[1] {
				v = 0
			}
		}
		_ = binary.Write(&data, binary.LittleEndian, int16(v*32767))
	}
	var b bytes.Buffer
	b.WriteString("RIFF")
	_ = binary.Write(&b, binary.LittleEndian, uint32(36+data.Len()))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(rate), uint32(rate * 2), uint16(2), uint16(16)} {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data")
	_ = binary.Write(&b, binary.LittleEndian, uint32(data.Len()))
	b.Write(data.Bytes())
	return b.Bytes()
}

// post sends a multipart body with file (named name) and the fields, in order.
func (f *audioFixture) post(t *testing.T, path string, file []byte, fields ...string) (*http.Response, []byte) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	if file != nil {
		fw, err := w.CreateFormFile("file", "clip.wav")
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(file)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		_ = w.WriteField(fields[i], fields[i+1])
	}
	w.Close()
	resp, err := http.Post(f.srv.URL+path, w.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// seventy is 70 s of tone with silent stretches at 28 s and 56 s: the windows are cut there.
var seventy = wav(16000, 70, [2]float64{28, 28.5}, [2]float64{56, 56.5})

type verboseReply struct {
	Task     string  `json:"task"`
	Language string  `json:"language"`
	Duration float64 `json:"duration"`
	Text     string  `json:"text"`
	Segments []struct {
		ID         int
		Start, End float64
		Text       string
	} `json:"segments"`
	Usage struct {
		Type    string  `json:"type"`
		Seconds float64 `json:"seconds"`
	} `json:"usage"`
}

// TestTranscriptionWindows: 70 s of audio is transcribed in three windows of at most 30 s, cut
// in the silent stretches, each one generation through the chat template with the audio's
// instruction at temperature 0; verbose_json gives each window's text as a segment timed by
// its window, the text the segments joined, and the duration.
func TestTranscriptionWindows(t *testing.T) {
	f := setupAudio(t)
	resp, b := f.post(t, "/v1/audio/transcriptions", seventy, "model", "ears", "response_format", "verbose_json",
		"language", "de", "prompt", "Names: Zoë.", "timestamp_granularities[]", "segment")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var v verboseReply
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.Task != "transcribe" || v.Language != "de" || v.Duration != 70 || v.Usage.Type != "duration" || v.Usage.Seconds != 70 {
		t.Fatalf("verbose_json: %s", b)
	}
	if len(v.Segments) != 3 || v.Text != "words 1. words 2. words 3." {
		t.Fatalf("segments %+v, text %q", v.Segments, v.Text)
	}
	silent := [][2]float64{{28, 28.5}, {56, 56.5}}
	for i, s := range v.Segments {
		if s.ID != i || s.Text != fmt.Sprintf("words %d.", i+1) || s.End-s.Start > 30 || s.End <= s.Start {
			t.Errorf("segment %d: %+v", i, s)
		}
		if i > 0 && s.Start != v.Segments[i-1].End {
			t.Errorf("segment %d starts at %v, the last ended at %v", i, s.Start, v.Segments[i-1].End)
		}
		if i < 2 && (s.End < silent[i][0] || s.End > silent[i][1]) {
			t.Errorf("window %d is cut at %v s, outside the silence %v", i, s.End, silent[i])
		}
	}
	if v.Segments[0].Start != 0 || v.Segments[2].End != 70 {
		t.Errorf("the windows cover %v to %v of 70 s", v.Segments[0].Start, v.Segments[2].End)
	}
	seen := f.ears.Requests()
	if len(seen) != 3 {
		t.Fatalf("%d generations, want one per window", len(seen))
	}
	for i, r := range seen {
		// The window's clip reached the engine decoded, in place of the one marker, before the
		// instruction.
		s := v.Segments[i]
		if len(r.Media) != 1 || r.Media[0].Kind != llm.MediaAudio || math.Abs(float64(r.Media[0].Samples())-(s.End-s.Start)*16000) > 16 ||
			r.MediaMarker == "" || strings.Count(r.Prompt, r.MediaMarker) != 1 ||
			strings.Index(r.Prompt, r.MediaMarker) > strings.Index(r.Prompt, "Transcribe the audio") {
			t.Fatalf("window %d reached the engine with %d media (%d samples for %v s), marker %q in %q",
				i, len(r.Media), r.Media[0].Samples(), s.End-s.Start, r.MediaMarker, r.Prompt)
		}
		if r.Sampling.Temperature == nil || *r.Sampling.Temperature != 0 ||
			!strings.Contains(r.Prompt, "<|im_start|>user\n") || !strings.Contains(r.Prompt, "Transcribe the audio exactly.") ||
			!strings.Contains(r.Prompt, "The speech is in German.") || !strings.Contains(r.Prompt, "Names: Zoë.") {
			t.Fatalf("a window's generation: temperature %v, prompt %q", r.Sampling.Temperature, r.Prompt)
		}
	}
}

// TestTranscriptionFormats: each response_format in its shape (the subtitles' cue times
// parsed back), translations' instruction and task, and usage summed over the windows.
func TestTranscriptionFormats(t *testing.T) {
	f := setupAudio(t)
	cue := regexp.MustCompile(`(?m)^(\d+)\n(\d\d):(\d\d):(\d\d)([,.])(\d\d\d) --> (\d\d):(\d\d):(\d\d)([,.])(\d\d\d)\n(.+)\n$`)
	stamp := func(m []string, at int) float64 {
		h, _ := strconv.Atoi(m[at])
		mi, _ := strconv.Atoi(m[at+1])
		s, _ := strconv.Atoi(m[at+2])
		ms, _ := strconv.Atoi(m[at+4])
		return float64(h*3600+mi*60+s) + float64(ms)/1000
	}
	for _, format := range []string{"srt", "vtt"} {
		resp, b := f.post(t, "/v1/audio/transcriptions", seventy, "model", "ears", "response_format", format)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", format, resp.StatusCode, b)
		}
		body := string(b)
		t.Logf("%s:\n%s", format, b)
		if format == "vtt" {
			var ok bool
			if body, ok = strings.CutPrefix(body, "WEBVTT\n\n"); !ok {
				t.Fatalf("vtt without its header: %q", b)
			}
		}
		blocks := strings.Split(strings.TrimSuffix(body, "\n"), "\n\n")
		if len(blocks) != 3 {
			t.Fatalf("%s: %d cues: %q", format, len(blocks), b)
		}
		sep := map[string]string{"srt": ",", "vtt": "."}[format]
		last := 0.0
		for i, block := range blocks {
			m := cue.FindStringSubmatch(block + "\n")
			if m == nil || m[1] != strconv.Itoa(i+1) || m[5] != sep || m[10] != sep || !strings.HasPrefix(m[12], "words ") {
				t.Fatalf("%s cue %d: %q", format, i, block)
			}
			start, end := stamp(m, 2), stamp(m, 7)
			if start != last || end <= start || end-start > 30 {
				t.Fatalf("%s cue %d runs %v to %v after %v", format, i, start, end, last)
			}
			last = end
		}
		if last != 70 {
			t.Fatalf("%s: the last cue ends at %v of 70 s", format, last)
		}
	}

	resp, b := f.post(t, "/v1/audio/transcriptions", wav(16000, 3), "model", "ears", "response_format", "text")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || !regexp.MustCompile(`^words \d+\.\n$`).Match(b) {
		t.Fatalf("text: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var raw map[string]any
	resp, b = f.post(t, "/v1/audio/transcriptions", seventy, "model", "ears") // json is the default
	if resp.StatusCode != 200 || json.Unmarshal(b, &raw) != nil {
		t.Fatalf("json: %d %s", resp.StatusCode, b)
	}
	usage, _ := raw["usage"].(map[string]any)
	in, _ := usage["input_tokens"].(float64)
	out, _ := usage["output_tokens"].(float64)
	var wantIn, wantOut int
	seen := f.ears.Requests()
	for i := len(seen) - 3; i < len(seen); i++ {
		// The fake: a token per byte, BOS first, the clip's marker a run of MediaTokens.
		wantIn += len(seen[i].Prompt) - len(seen[i].MediaMarker) + enginetest.MediaTokens + 1
		wantOut += len(fmt.Sprintf(" words %d. ", i+1)) // the (i+1)-th generation's reply
	}
	text, _ := raw["text"].(string)
	if !regexp.MustCompile(`^words \d+\. words \d+\. words \d+\.$`).MatchString(text) || usage["type"] != "tokens" ||
		int(in) != wantIn || int(out) != wantOut || usage["total_tokens"] != in+out {
		t.Fatalf("json: %s; want the windows' tokens summed: %d in, %d out", b, wantIn, wantOut)
	}

	resp, b = f.post(t, "/v1/audio/translations", wav(16000, 3), "model", "ears", "response_format", "verbose_json")
	var v verboseReply
	if resp.StatusCode != 200 || json.Unmarshal(b, &v) != nil || v.Task != "translate" || v.Language != "english" {
		t.Fatalf("translation: %d %s", resp.StatusCode, b)
	}
	if p := f.ears.Requests()[len(f.ears.Requests())-1].Prompt; !strings.Contains(p, "Translate the audio into English.") {
		t.Fatalf("a translation's prompt: %q", p)
	}

	// One record for the request, the windows' usage summed.
	if err := f.st.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	recs, err := f.st.RecentRequests(t.Context(), 20)
	if err != nil {
		t.Fatal(err)
	}
	var transcriptions int
	for _, r := range recs {
		if r.Endpoint == "/v1/audio/transcriptions" {
			transcriptions++
			if r.Model != "ears" || r.Status != 200 || r.PromptTokens == 0 || r.CompletionTokens == 0 {
				t.Errorf("record %+v", r)
			}
		}
	}
	if transcriptions != 4 {
		t.Fatalf("%d transcription records for 4 requests: %+v", transcriptions, recs)
	}
}

// TestTranscriptionStream: stream=true sends transcript.text.delta events whose deltas make
// the text, then transcript.text.done with the whole text and usage.
func TestTranscriptionStream(t *testing.T) {
	f := setupAudio(t)
	resp, b := f.post(t, "/v1/audio/transcriptions", seventy, "model", "ears", "stream", "true")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var deltas strings.Builder
	var done map[string]any
	for _, frame := range strings.Split(strings.TrimSpace(string(b)), "\n\n") {
		data, ok := strings.CutPrefix(frame, "data: ")
		if !ok {
			continue // a keep-alive
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("frame %q: %v", frame, err)
		}
		switch ev["type"] {
		case "transcript.text.delta":
			if done != nil {
				t.Fatalf("a delta after done: %q", frame)
			}
			deltas.WriteString(ev["delta"].(string))
		case "transcript.text.done":
			done = ev
		default:
			t.Fatalf("unexpected event %q", frame)
		}
	}
	if done == nil || done["text"] != deltas.String() || !regexp.MustCompile(`^words \d+\. words \d+\. words \d+\.$`).MatchString(deltas.String()) {
		t.Fatalf("deltas %q, done %v", deltas.String(), done)
	}
	if u, _ := done["usage"].(map[string]any); u["type"] != "tokens" || u["output_tokens"].(float64) == 0 {
		t.Fatalf("done's usage: %v", done["usage"])
	}
}

// TestTranscriptionRefusals: a model that does not hear is 400 unsupported_model; a file over
// the limit 413; an undecodable file 400 saying so; bad fields 400 naming them.
func TestTranscriptionRefusals(t *testing.T) {
	f := setupAudio(t)
	badHeader := wav(16000, 1)
	binary.LittleEndian.PutUint16(badHeader[32:], 3) // block align that does not fit the format
	huge := make([]byte, 20<<20+1)
	copy(huge, wav(16000, 1))
	twoHours := wav(16000, 1)
	binary.LittleEndian.PutUint32(twoHours[40:], 2*3600*16000*2) // the data chunk's size: 2 h at 16 kHz, 16-bit
	binary.LittleEndian.PutUint32(twoHours[4:], 36+2*3600*16000*2)
	for _, tt := range []struct {
		name   string
		path   string
		file   []byte
		fields []string
		want   wantError
	}{
		{"a text model", "/v1/audio/transcriptions", wav(16000, 1), []string{"model", "fake"}, wantError{400, invalidReq, "model", "unsupported_model", "does not take audio"}},
		{"a text model translating", "/v1/audio/translations", wav(16000, 1), []string{"model", "fake"}, wantError{400, invalidReq, "model", "unsupported_model", "fake"}},
		{"over the limit", "/v1/audio/transcriptions", huge, []string{"model", "ears"}, wantError{413, invalidReq, "file", "payload_too_large", "20 MiB"}},
		{"a 2-hour file", "/v1/audio/transcriptions", twoHours, []string{"model", "ears"}, wantError{413, invalidReq, "file", "payload_too_large", "limit"}},
		{"not audio", "/v1/audio/transcriptions", []byte("this is plainly not a sound file at all"), []string{"model", "ears"}, wantError{400, invalidReq, "file", "", "cannot be decoded as audio"}},
		{"a WAV with a wrong header", "/v1/audio/transcriptions", badHeader, []string{"model", "ears"}, wantError{400, invalidReq, "file", "", "block align"}},
		{"an empty file", "/v1/audio/transcriptions", []byte{}, []string{"model", "ears"}, wantError{400, invalidReq, "file", "", "empty"}},
		{"no file", "/v1/audio/transcriptions", nil, []string{"model", "ears"}, wantError{400, invalidReq, "file", "", "file"}},
		{"no model", "/v1/audio/transcriptions", wav(16000, 1), nil, wantError{400, invalidReq, "model", "", "model"}},
		{"unknown model", "/v1/audio/transcriptions", wav(16000, 1), []string{"model", "nope"}, wantError{404, invalidReq, "model", "model_not_found", "nope"}},
		{"bad format", "/v1/audio/transcriptions", wav(16000, 1), []string{"model", "ears", "response_format", "xml"}, wantError{400, invalidReq, "response_format", "", "xml"}},
		{"bad temperature", "/v1/audio/transcriptions", wav(16000, 1), []string{"model", "ears", "temperature", "hot"}, wantError{400, invalidReq, "temperature", "", "hot"}},
		{"NaN temperature", "/v1/audio/transcriptions", wav(16000, 1), []string{"model", "ears", "temperature", "NaN"}, wantError{400, invalidReq, "temperature", "", "NaN"}},
		{"bad stream", "/v1/audio/transcriptions", wav(16000, 1), []string{"model", "ears", "stream", "maybe"}, wantError{400, invalidReq, "stream", "", "maybe"}},
		{"stream as srt", "/v1/audio/transcriptions", wav(16000, 1), []string{"model", "ears", "stream", "true", "response_format", "srt"}, wantError{400, invalidReq, "stream", "", "srt"}},
		{"word timestamps", "/v1/audio/transcriptions", wav(16000, 1), []string{"model", "ears", "response_format", "verbose_json", "timestamp_granularities[]", "word"}, wantError{400, invalidReq, "timestamp_granularities", "unsupported_parameter", "word"}},
		{"bad language", "/v1/audio/transcriptions", wav(16000, 1), []string{"model", "ears", "language", "en; rm -rf"}, wantError{400, invalidReq, "language", "", "ISO-639-1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := f.post(t, tt.path, tt.file, tt.fields...)
			t.Logf("%s", b)
			checkError(t, resp, b, tt.want)
		})
	}
	resp, b := f.post(t, "/v1/audio/transcriptions", wav(16000, 1), "model", "ears")
	if resp.StatusCode != 200 {
		t.Fatalf("after the refusals: %d %s", resp.StatusCode, b)
	}
	// Not multipart at all.
	r, err := http.Post(f.srv.URL+"/v1/audio/transcriptions", "application/json", strings.NewReader(`{"model":"ears"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(r.Body)
	r.Body.Close()
	checkError(t, r, b, wantError{400, invalidReq, "file", "", "multipart/form-data"})
}

// TestTranscriptionThroughTheSDK: openai-go's Audio.Transcriptions.New (json, verbose_json),
// its streaming, and Audio.Translations.New read the replies.
func TestTranscriptionThroughTheSDK(t *testing.T) {
	f := setupAudio(t)
	ctx := t.Context()
	tr, err := f.client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		File: openai.File(bytes.NewReader(seventy), "speech.wav", "audio/wav"), Model: "ears",
	})
	if err != nil || !regexp.MustCompile(`^words \d+\. words \d+\. words \d+\.$`).MatchString(tr.Text) ||
		tr.Usage.Type != "tokens" || tr.Usage.InputTokens == 0 || tr.Usage.OutputTokens == 0 {
		t.Fatalf("json: %v %+v", err, tr)
	}
	verbose, err := f.client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		File: openai.File(bytes.NewReader(seventy), "speech.wav", "audio/wav"), Model: "ears",
		ResponseFormat: openai.AudioResponseFormatVerboseJSON, Language: openai.String("en"), Temperature: openai.Float(0.2),
		TimestampGranularities: []string{"segment"},
	})
	if err != nil {
		t.Fatal(err)
	}
	v := verbose.AsTranscriptionVerbose()
	if v.Duration != 70 || v.Language != "en" || len(v.Segments) != 3 || v.Segments[2].End != 70 || v.Segments[1].Start != v.Segments[0].End {
		t.Fatalf("verbose_json: %+v", v)
	}
	if temp := f.ears.Requests()[len(f.ears.Requests())-1].Sampling.Temperature; temp == nil || *temp != 0.2 {
		t.Fatalf("temperature 0.2 reached the engine as %v", temp)
	}

	stream := f.client.Audio.Transcriptions.NewStreaming(ctx, openai.AudioTranscriptionNewParams{
		File: openai.File(bytes.NewReader(wav(16000, 2)), "speech.wav", "audio/wav"), Model: "ears",
	})
	var deltas, done string
	for stream.Next() {
		switch ev := stream.Current().AsAny().(type) {
		case openai.TranscriptionTextDeltaEvent:
			deltas += ev.Delta
		case openai.TranscriptionTextDoneEvent:
			done = ev.Text
		}
	}
	if err := stream.Err(); err != nil || done == "" || done != deltas {
		t.Fatalf("stream: %v; deltas %q, done %q", err, deltas, done)
	}

	tl, err := f.client.Audio.Translations.New(ctx, openai.AudioTranslationNewParams{
		File: openai.File(bytes.NewReader(wav(44100, 2)), "speech.wav", "audio/wav"), Model: "ears",
	})
	if err != nil || !regexp.MustCompile(`^words \d+\.$`).MatchString(tl.Text) {
		t.Fatalf("translation: %v %+v", err, tl)
	}

	_, err = f.client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		File: openai.File(bytes.NewReader(wav(16000, 1)), "speech.wav", "audio/wav"), Model: "fake",
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "unsupported_model" {
		t.Fatalf("a text model through the SDK: %v", err)
	}
}

// TestTranscriptionKeepalive: with --nonstream-keepalive a JSON transcript may be padded with
// leading spaces (still valid JSON), but a text, srt or vtt one never is: the spaces would be
// part of the text.
func TestTranscriptionKeepalive(t *testing.T) {
	st := servertest.Store(t)
	tmpl, err := chat.Parse(chatML)
	if err != nil {
		t.Fatal(err)
	}
	// Each generation waits long enough that the padder writes its first space.
	ears := enginetest.NewScripted(8192, func(*llm.Request) string { time.Sleep(50 * time.Millisecond); return "words." })
	svc := core.New(core.Config{}, st, &core.Model{ID: "ears", Path: "/models/ears.gguf", Engine: ears, Template: tmpl, ContextLength: 8192, Audio: true})
	srv := httptest.NewServer(server.New(server.Config{NonstreamKeepalive: 10 * time.Millisecond}, svc))
	t.Cleanup(srv.Close)
	f := &audioFixture{srv: srv, st: st, ears: ears}
	for format, want := range map[string]string{"text": "words.\n", "srt": "1\n00:00:00,000 --> 00:00:01,000\nwords.\n\n", "vtt": "WEBVTT\n\n1\n00:00:00.000 --> 00:00:01.000\nwords.\n\n"} {
		resp, b := f.post(t, "/v1/audio/transcriptions", wav(16000, 1), "model", "ears", "response_format", format)
		if resp.StatusCode != 200 || string(b) != want || resp.Header.Get(server.KeepaliveHeader) != "" {
			t.Errorf("%s: %d %q (keepalive %q), want %q", format, resp.StatusCode, b, resp.Header.Get(server.KeepaliveHeader), want)
		}
	}
	resp, b := f.post(t, "/v1/audio/transcriptions", wav(16000, 1), "model", "ears")
	var j struct{ Text string }
	if resp.StatusCode != 200 || json.Unmarshal(b, &j) != nil || j.Text != "words." || resp.Header.Get(server.KeepaliveHeader) != "whitespace" {
		t.Errorf("json: %d %q (keepalive %q)", resp.StatusCode, b, resp.Header.Get(server.KeepaliveHeader))
	}
}
