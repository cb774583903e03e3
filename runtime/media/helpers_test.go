package media

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/png"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// encodePNG writes img as a PNG.
func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pngChunk is one PNG chunk: length, type, data, CRC.
func pngChunk(kind string, data []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	out = append(out, kind...)
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(append([]byte(kind), data...)))
}

// craftPNG is a PNG of the declared size and color (8-bit gray: 0, 8-bit RGBA: 6, with depth
// bits a channel) whose IDAT holds raw (uncompressed: rawLen bytes of zeros, compressed).
func craftPNG(t testing.TB, w, h uint32, depth, colorType byte, rawLen int) []byte {
	t.Helper()
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, depth, colorType, 0, 0, 0)
	out := append([]byte("\x89PNG\r\n\x1a\n"), pngChunk("IHDR", ihdr)...)
	if rawLen > 0 {
		var z bytes.Buffer
		zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
		zeros := make([]byte, 1<<20)
		for left := rawLen; left > 0; left -= len(zeros) {
			if _, err := zw.Write(zeros[:min(left, len(zeros))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		out = append(out, pngChunk("IDAT", z.Bytes())...)
	}
	return append(out, pngChunk("IEND", nil)...)
}

// allocated is how many bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// mustRefuse checks err is a refusal (llm.ErrInvalidInput), a size refusal when tooBig, whose
// message holds every one of words.
func mustRefuse(t *testing.T, err error, tooBig bool, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want a refusal naming %q", words)
	}
	if !errors.Is(err, llm.ErrInvalidInput) {
		t.Errorf("%v does not wrap llm.ErrInvalidInput", err)
	}
	if errors.Is(err, ErrTooLarge) != tooBig {
		t.Errorf("errors.Is(%v, ErrTooLarge) = %v; want %v", err, !tooBig, tooBig)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
}

// samples reads Media.PCM back as floats.
func samples(m llm.Media) []float64 {
	out := make([]float64, m.Samples())
	for i := range out {
		out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(m.PCM[4*i:])))
	}
	return out
}

// amplitude is the amplitude of the freq Hz component of x (sampled at rate), by the
// Goertzel recurrence: a sine of amplitude A gives about A.
func amplitude(x []float64, freq, rate float64) float64 {
	w := 2 * math.Pi * freq / rate
	c := 2 * math.Cos(w)
	var s1, s2 float64
	for _, v := range x {
		s1, s2 = v+c*s1-s2, s1
	}
	power := s1*s1 + s2*s2 - c*s1*s2
	return 2 * math.Sqrt(math.Max(power, 0)) / float64(len(x))
}

// wavSpec describes a WAV file for writeWAV.
type wavSpec struct {
	format, channels, rate, bits int
	extensible                   bool
}

// writeWAV encodes frames (frames[i][c] in [-1, 1]) as a WAV file.
func writeWAV(spec wavSpec, frames [][]float64) []byte {
	bytesPer := spec.bits / 8
	var data []byte
	for _, f := range frames {
		for _, v := range f {
			switch {
			case spec.format == wavFloat:
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(v)))
			case bytesPer == 1:
				data = append(data, byte(int(math.Round(v*127))+128))
			default:
				q := int64(math.Round(v * (math.Ldexp(1, spec.bits-1) - 1)))
				for b := range bytesPer {
					data = append(data, byte(q>>(8*b)))
				}
			}
		}
	}
	return wavBytes(spec, data, uint32(len(data)))
}

// wavBytes is a WAV header for spec declaring dataLen bytes of data, then data.
func wavBytes(spec wavSpec, data []byte, dataLen uint32) []byte {
	le := binary.LittleEndian
	block := spec.channels * spec.bits / 8
	fmtChunk := le.AppendUint16(nil, uint16(spec.format))
	if spec.extensible {
		fmtChunk = le.AppendUint16(nil, wavExtensible)
	}
	fmtChunk = le.AppendUint16(fmtChunk, uint16(spec.channels))
	fmtChunk = le.AppendUint32(fmtChunk, uint32(spec.rate))
	fmtChunk = le.AppendUint32(fmtChunk, uint32(spec.rate*block))
	fmtChunk = le.AppendUint16(fmtChunk, uint16(block))
	fmtChunk = le.AppendUint16(fmtChunk, uint16(spec.bits))
	if spec.extensible {
		fmtChunk = le.AppendUint16(fmtChunk, 22)
		fmtChunk = le.AppendUint16(fmtChunk, uint16(spec.bits))
		fmtChunk = le.AppendUint32(fmtChunk, 0)
		fmtChunk = le.AppendUint16(fmtChunk, uint16(spec.format))
		fmtChunk = append(fmtChunk, "\x00\x00\x00\x00\x10\x00\x80\x00\x00\xAA\x00\x38\x9B\x71"...)
	}
	out := []byte("RIFF\x00\x00\x00\x00WAVE")
	out = append(out, "fmt "...)
	out = le.AppendUint32(out, uint32(len(fmtChunk)))
	out = append(out, fmtChunk...)
	out = append(out, "data"...)
	out = le.AppendUint32(out, dataLen)
	out = append(out, data...)
	le.PutUint32(out[4:], uint32(len(out)-8))
	return out
}

// sine is n frames of channels copies of a sine at freq Hz (sampled at rate) of amplitude amp.
func sine(n, channels int, freq, rate, amp float64) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		v := amp * math.Sin(2*math.Pi*freq*float64(i)/rate)
		out[i] = make([]float64, channels)
		for c := range out[i] {
			out[i][c] = v
		}
	}
	return out
}
