package core

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
)

// The audio side of transcription: where to cut the windows, and each window as a file the
// prompt road decodes like any client's clip.

// quietSearch is how far before a window's end splitWindows looks for a quiet place to cut,
// and quietFrame the stretch whose energy it measures (20 ms), so a word is rarely cut in two.
const (
	quietSearch = 5 * llm.AudioSampleRate
	quietFrame  = llm.AudioSampleRate / 50
)

// splitWindows cuts pcm (little-endian float32 samples) into windows of at most
// transcribeWindow samples, [start, end) in samples, each cut in the quietest 20 ms of the
// last 5 s before the window's limit.
func splitWindows(pcm []byte) [][2]int {
	n := len(pcm) / 4
	var out [][2]int
	for start := 0; start < n; {
		end := start + transcribeWindow
		if end >= n {
			out = append(out, [2]int{start, n})
			break
		}
		cut := quietest(pcm, max(start+1, end-quietSearch), end)
		out = append(out, [2]int{start, cut})
		start = cut
	}
	return out
}

// quietest is the middle of the 20 ms frame with the least energy in [lo, hi).
func quietest(pcm []byte, lo, hi int) int {
	best, bestEnergy := hi, math.Inf(1)
	for at := lo; at+quietFrame <= hi; at += quietFrame {
		var e float64
		for i := at; i < at+quietFrame; i++ {
			v := float64(math.Float32frombits(binary.LittleEndian.Uint32(pcm[4*i:])))
			e += v * v
		}
		if e < bestEnergy {
			best, bestEnergy = at+quietFrame/2, e
		}
	}
	return best
}

// floatWAV is a WAV file (IEEE float, mono, llm.AudioSampleRate) holding pcm, little-endian
// float32 samples.
func floatWAV(pcm []byte) []byte {
	const header = 44
	le := binary.LittleEndian
	b := make([]byte, header, header+len(pcm))
	copy(b[0:], "RIFF")
	le.PutUint32(b[4:], uint32(header-8+len(pcm)))
	copy(b[8:], "WAVEfmt ")
	le.PutUint32(b[16:], 16)                    // fmt chunk size
	le.PutUint16(b[20:], 3)                     // IEEE float
	le.PutUint16(b[22:], 1)                     // mono
	le.PutUint32(b[24:], llm.AudioSampleRate)   // sample rate
	le.PutUint32(b[28:], llm.AudioSampleRate*4) // byte rate
	le.PutUint16(b[32:], 4)                     // block align
	le.PutUint16(b[34:], 32)                    // bits per sample
	copy(b[36:], "data")
	le.PutUint32(b[40:], uint32(len(pcm)))
	return append(b, pcm...)
}

// languages names the ISO-639-1 codes clients send most, for the instruction; others are
// named by their code.
var languages = map[string]string{
	"ar": "Arabic", "cs": "Czech", "da": "Danish", "de": "German", "el": "Greek", "en": "English",
	"es": "Spanish", "fi": "Finnish", "fr": "French", "he": "Hebrew", "hi": "Hindi", "hu": "Hungarian",
	"id": "Indonesian", "it": "Italian", "ja": "Japanese", "ko": "Korean", "nl": "Dutch", "no": "Norwegian",
	"pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sv": "Swedish", "th": "Thai",
	"tr": "Turkish", "uk": "Ukrainian", "vi": "Vietnamese", "zh": "Chinese",
}

func languageName(code string) string {
	if name, ok := languages[strings.ToLower(code)]; ok {
		return name
	}
	return "the language " + code
}
