package openai

import (
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/sse"
)

// Speech to text: POST /v1/audio/transcriptions and /v1/audio/translations (multipart: file,
// model, language, prompt, response_format, temperature, stream, timestamp_granularities[]),
// served by audio-input models through core.Transcribe; rendered as OpenAI renders them
// (audio_render.go).

func (h *handlers) routesAudio(r gin.IRouter) {
	r.POST("/v1/audio/transcriptions", Handle(func(c *gin.Context) error { return h.transcribe(c, false) }))
	r.POST("/v1/audio/translations", Handle(func(c *gin.Context) error { return h.transcribe(c, true) }))
}

// Response formats.
const (
	formatJSON        = "json"
	formatText        = "text"
	formatSRT         = "srt"
	formatVTT         = "vtt"
	formatVerboseJSON = "verbose_json"
)

// audioForm is a transcription request as its multipart body says it.
type audioForm struct {
	file                      []byte
	mime                      string
	haveFile                  bool
	model, language, prompt   string
	format                    string
	temperature               *float64
	stream                    bool
	granularities             []string
	sawTemperature            bool
	rawTemperature, rawStream string
}

// Bounds of the text fields.
const (
	maxPromptBytes = 8 << 10
	maxFieldBytes  = 1 << 10
)

func (h *handlers) transcribe(c *gin.Context, translate bool) error {
	form, err := h.readAudioForm(c)
	if err != nil {
		return err
	}
	if err := form.check(h.svc.ModelOptional()); err != nil {
		return err
	}
	req := &core.TranscribeRequest{
		ID: newID("transcript-"), Endpoint: c.FullPath(), Model: form.model, Stream: form.stream,
		Audio: form.file, MIME: form.mime, Language: form.language, Prompt: form.prompt,
		Translate: translate, Temperature: form.temperature,
	}
	if form.stream {
		return h.streamTranscript(c, req)
	}
	ctx := c.Request.Context()
	if form.format == formatText || form.format == formatSRT || form.format == formatVTT {
		// --nonstream-keepalive pads a JSON body with spaces; they would be part of a text one.
		ctx = core.WithAdmitted(ctx, nil)
	}
	t, err := h.svc.Transcribe(ctx, req, nil)
	if err != nil {
		return audioError(err)
	}
	renderTranscript(c, t, form.format, translate)
	return nil
}

// readAudioForm reads the multipart body; the file is read up to the server's audio limit,
// one byte past it refused with 413.
func (h *handlers) readAudioForm(c *gin.Context) (*audioForm, error) {
	mr, err := c.Request.MultipartReader()
	if err != nil {
		return nil, invalid("file", "this route takes multipart/form-data with the fields file and model (and language, prompt, response_format, temperature, stream)")
	}
	limit := h.svc.AudioFileLimit()
	form := &audioForm{format: formatJSON}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, invalid("", "malformed multipart body: "+err.Error())
		}
		err = form.read(part, limit)
		part.Close()
		if err != nil {
			return nil, err
		}
	}
	return form, nil
}

// read takes one field of the body.
func (f *audioForm) read(part *multipart.Part, limit int64) error {
	var err error
	switch name := part.FormName(); name {
	case "file":
		if f.haveFile {
			return invalid("file", "send one file")
		}
		f.haveFile = true
		f.file, err = io.ReadAll(io.LimitReader(part, limit+1))
		if err != nil {
			return invalid("file", "malformed multipart body: "+err.Error())
		}
		if int64(len(f.file)) > limit {
			return &Error{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "payload_too_large", Param: "file",
				Message: fmt.Sprintf("the audio file is larger than %d MiB, the most this server takes; send a shorter or more compressed file", limit>>20)}
		}
		if ct := strings.ToLower(part.Header.Get("Content-Type")); strings.HasPrefix(ct, "audio/") {
			f.mime = ct // a generic type (application/octet-stream) is left for the decoder to sniff
		}
	case "model":
		f.model, err = fieldText(part, maxFieldBytes)
	case "language":
		f.language, err = fieldText(part, maxFieldBytes)
	case "prompt":
		f.prompt, err = fieldText(part, maxPromptBytes)
	case "response_format":
		f.format, err = fieldText(part, maxFieldBytes)
	case "temperature":
		f.rawTemperature, err = fieldText(part, maxFieldBytes)
		f.sawTemperature = true
	case "stream":
		f.rawStream, err = fieldText(part, maxFieldBytes)
	case "timestamp_granularities[]", "timestamp_granularities":
		var g string
		g, err = fieldText(part, maxFieldBytes)
		f.granularities = append(f.granularities, g)
	default:
		_, err = io.Copy(io.Discard, io.LimitReader(part, 1<<20)) // other fields are ignored, as in JSON bodies
	}
	return err
}

// fieldText reads a text field of at most most bytes.
func fieldText(part *multipart.Part, most int) (string, error) {
	b, err := io.ReadAll(io.LimitReader(part, int64(most)+1))
	if err != nil {
		return "", invalid(part.FormName(), "malformed multipart body: "+err.Error())
	}
	if len(b) > most {
		return "", invalid(part.FormName(), fmt.Sprintf("%s is longer than %d bytes", part.FormName(), most))
	}
	return string(b), nil
}

// check validates the fields and reads the typed ones.
func (f *audioForm) check(modelOptional bool) error {
	switch {
	case !f.haveFile:
		return invalid("file", "missing required parameter 'file': send the audio (WAV, MP3 or FLAC) as the multipart field file")
	case f.model == "" && !modelOptional: // team mode routes an empty name to the caller's lane
		return invalid("model", "you must provide a model parameter: an audio-input model from GET /v1/models")
	}
	switch f.format {
	case "":
		f.format = formatJSON
	case formatJSON, formatText, formatSRT, formatVTT, formatVerboseJSON:
	default:
		return invalid("response_format", fmt.Sprintf("response_format %q: use json, text, srt, vtt or verbose_json", f.format))
	}
	if !validLanguage(f.language) {
		return invalid("language", fmt.Sprintf("language %q: give the language's ISO-639-1 code, such as en or de", f.language))
	}
	if f.sawTemperature {
		t, err := strconv.ParseFloat(strings.TrimSpace(f.rawTemperature), 64)
		if err != nil || !(t >= 0 && t <= 2) {
			return invalid("temperature", fmt.Sprintf("temperature must be a number from 0 to 2, got %q", f.rawTemperature))
		}
		f.temperature = &t
	}
	if f.rawStream != "" {
		on, err := strconv.ParseBool(strings.TrimSpace(f.rawStream))
		if err != nil {
			return invalid("stream", fmt.Sprintf("stream must be true or false, got %q", f.rawStream))
		}
		f.stream = on
	}
	if f.stream && f.format != formatJSON && f.format != formatText {
		return invalid("stream", fmt.Sprintf("stream=true sends transcript.text.delta events, which response_format %s has no form of; ask for json or text", f.format))
	}
	for _, g := range f.granularities {
		switch g {
		case "segment":
		case "word":
			return unsupported("timestamp_granularities", "word timestamps are not available: segments are timed by the 30-second windows the audio is transcribed in; ask for segment")
		default:
			return invalid("timestamp_granularities", fmt.Sprintf("timestamp_granularities %q: use segment", g))
		}
	}
	if len(f.granularities) > 0 && f.format != formatVerboseJSON {
		return invalid("timestamp_granularities", "timestamp_granularities needs response_format verbose_json")
	}
	return nil
}

// validLanguage reports whether code reads as a language code ("" for none).
func validLanguage(code string) bool {
	if len(code) > 16 {
		return false
	}
	for _, r := range code {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-') {
			return false
		}
	}
	return true
}

// streamTranscript sends the transcript as OpenAI's events: transcript.text.delta as the text
// comes, then transcript.text.done with the whole.
func (h *handlers) streamTranscript(c *gin.Context, req *core.TranscribeRequest) error {
	s := sse.New(c.Writer, h.opts.KeepAlive, h.opts.WriteTimeout)
	defer s.Close()
	t, err := h.svc.Transcribe(c.Request.Context(), req, func(text string) error {
		return s.Data(transcriptDelta{Type: "transcript.text.delta", Delta: text})
	})
	if err == nil {
		u := tokenUsage(t)
		err = s.Data(transcriptDone{Type: "transcript.text.done", Text: t.Text, Usage: &u})
	}
	if err != nil {
		if !s.Settle() {
			return audioError(err)
		}
		_ = s.Data(toError(audioError(err)).wire())
	}
	return nil
}

// audioError names the file as the parameter at fault when the file is, 413 when it is too
// large.
func audioError(err error) error {
	var fe *core.AudioFileError
	if !errors.As(err, &fe) {
		return err
	}
	if fe.TooLarge {
		return &Error{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "payload_too_large", Param: "file", Message: fe.Error()}
	}
	return invalid("file", fe.Error())
}
