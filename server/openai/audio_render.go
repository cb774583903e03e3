package openai

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/core"
)

// The shapes of a transcript: json {text, usage}, text, srt, vtt, verbose_json {task,
// language, duration, text, segments, usage}, and the stream's events.

type transcriptUsage struct {
	Type         string   `json:"type"`
	InputTokens  *int     `json:"input_tokens,omitempty"`
	OutputTokens *int     `json:"output_tokens,omitempty"`
	TotalTokens  *int     `json:"total_tokens,omitempty"`
	Seconds      *float64 `json:"seconds,omitempty"`
}

// tokenUsage is usage in tokens (the json shape's and the stream's), the audio's included.
func tokenUsage(t *core.Transcript) transcriptUsage {
	in, out := t.Usage.PromptTokens, t.Usage.CompletionTokens
	total := in + out
	return transcriptUsage{Type: "tokens", InputTokens: &in, OutputTokens: &out, TotalTokens: &total}
}

type transcriptJSON struct {
	Text  string          `json:"text"`
	Usage transcriptUsage `json:"usage"`
}

type segmentJSON struct {
	ID          int     `json:"id"`
	Seek        int     `json:"seek"` // the window's start, in 10 ms frames (Whisper's unit)
	Start       float64 `json:"start"`
	End         float64 `json:"end"`
	Text        string  `json:"text"`
	Tokens      []int   `json:"tokens"`
	Temperature float64 `json:"temperature"`
}

type verboseJSON struct {
	Task     string          `json:"task"`
	Language string          `json:"language"`
	Duration float64         `json:"duration"`
	Text     string          `json:"text"`
	Segments []segmentJSON   `json:"segments"`
	Usage    transcriptUsage `json:"usage"`
}

type transcriptDelta struct {
	Type  string `json:"type"`
	Delta string `json:"delta"`
}

type transcriptDone struct {
	Type  string           `json:"type"`
	Text  string           `json:"text"`
	Usage *transcriptUsage `json:"usage,omitempty"`
}

func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

// renderTranscript writes t in format.
func renderTranscript(c *gin.Context, t *core.Transcript, format string, translate bool) {
	switch format {
	case formatText:
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte(t.Text+"\n"))
	case formatSRT:
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte(cues(t, srtTime, "")))
	case formatVTT:
		c.Data(http.StatusOK, "text/vtt; charset=utf-8", []byte(cues(t, vttTime, "WEBVTT\n\n")))
	case formatVerboseJSON:
		task, lang := "transcribe", t.Language
		if translate {
			task = "translate"
		}
		if lang == "" {
			lang = "unknown" // the model does not say which it heard
		}
		secs := seconds(t.Duration)
		v := verboseJSON{Task: task, Language: lang, Duration: secs, Text: t.Text, Segments: []segmentJSON{},
			Usage: transcriptUsage{Type: "duration", Seconds: &secs}}
		for _, s := range t.Segments {
			v.Segments = append(v.Segments, segmentJSON{ID: s.ID, Seek: int(s.Start / (10 * time.Millisecond)),
				Start: seconds(s.Start), End: seconds(s.End), Text: s.Text, Tokens: []int{}})
		}
		c.JSON(http.StatusOK, v)
	default:
		c.JSON(http.StatusOK, transcriptJSON{Text: t.Text, Usage: tokenUsage(t)})
	}
}

// cues is t's segments as numbered subtitle cues (SRT; WebVTT after its header), one per
// segment with text, timed by the segment.
func cues(t *core.Transcript, stamp func(time.Duration) string, header string) string {
	var b strings.Builder
	b.WriteString(header)
	n := 0
	for _, s := range t.Segments {
		text := cueText(s.Text)
		if text == "" {
			continue
		}
		n++
		fmt.Fprintf(&b, "%d\n%s --> %s\n%s\n\n", n, stamp(s.Start), stamp(s.End), text)
	}
	return b.String()
}

// cueText is a segment's text as a cue may hold it: no blank lines (they end a cue) and no
// "-->" (it reads as timing).
func cueText(s string) string {
	var lines []string
	for _, line := range strings.Split(strings.ReplaceAll(s, "\r", ""), "\n") {
		if line = strings.TrimSpace(strings.ReplaceAll(line, "-->", "->")); line != "" {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}

// srtTime is HH:MM:SS,mmm; vttTime HH:MM:SS.mmm.
func srtTime(d time.Duration) string { return clockTime(d, ",") }
func vttTime(d time.Duration) string { return clockTime(d, ".") }

func clockTime(d time.Duration, sep string) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("%02d:%02d:%02d%s%03d", ms/3_600_000, ms/60_000%60, ms/1000%60, sep, ms%1000)
}
