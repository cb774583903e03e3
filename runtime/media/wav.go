package media

import (
	"encoding/binary"
	"math"
)

// WAV format tags (the fmt chunk's first field).
const (
	wavPCM        = 1
	wavFloat      = 3
	wavExtensible = 0xFFFE
)

// wavFile is a parsed WAV header and its sample bytes.
type wavFile struct {
	format, channels, bits int
	rate                   int
	data                   []byte // whole frames only
}

// frames is the number of sample frames (one sample per channel) in the data chunk.
func (w *wavFile) frames() int { return len(w.data) / (w.channels * w.bits / 8) }

// parseWAV reads a RIFF/WAVE header strictly, naming the field that is wrong. The data
// chunk's declared length gives the clip's duration, so an over-long clip is refused here,
// before any sample is converted.
func parseWAV(data []byte, maxSeconds int) (*wavFile, error) {
	if len(data) < 12 || string(data[0:4]) != "RIFF" {
		return nil, invalid("not a WAV file: the RIFF header is missing (the file must start with \"RIFF\")")
	}
	if string(data[8:12]) != "WAVE" {
		return nil, invalid("not a WAV file: the RIFF form type is %q, not \"WAVE\"", printable(data[8:12]))
	}
	var w *wavFile
	pos := 12
	for pos+8 <= len(data) {
		id, size := string(data[pos:pos+4]), int64(binary.LittleEndian.Uint32(data[pos+4:pos+8]))
		body := pos + 8
		switch id {
		case "fmt ":
			if size < 16 || int64(body)+16 > int64(len(data)) {
				return nil, invalid("bad WAV header: the fmt chunk is %d bytes; it needs at least 16", size)
			}
			f, err := parseWAVFormat(data[body:min(int64(len(data)), int64(body)+size)])
			if err != nil {
				return nil, err
			}
			w = f
		case "data":
			if w == nil {
				return nil, invalid("bad WAV header: the data chunk comes before the fmt chunk")
			}
			frame := w.channels * w.bits / 8
			have := int64(len(data) - body)
			// Writers that stream (a pipe, a live recording) cannot go back to fill in the
			// length and leave 0 or 0xFFFFFFFF: the data runs to the end of the file.
			if size == 0 || size == 0xFFFFFFFF {
				size = have
			}
			if seconds := float64(size/int64(frame)) / float64(w.rate); seconds > float64(maxSeconds) {
				return nil, tooLarge("the WAV audio is %s long; the limit is %d seconds", clock(seconds), maxSeconds)
			}
			if size > have {
				return nil, invalid("truncated WAV: the data chunk says %d bytes but the file holds %d; send the whole file", size, have)
			}
			w.data = data[body : int64(body)+size/int64(frame)*int64(frame)]
			if len(w.data) == 0 {
				return nil, invalid("the WAV file holds no samples (its data chunk is empty)")
			}
			return w, nil
		}
		pos = body + int(min(size+size&1, int64(len(data)))) // chunks are padded to even length
	}
	if w == nil {
		return nil, invalid("bad WAV header: there is no fmt chunk")
	}
	return nil, invalid("bad WAV file: there is no data chunk")
}

// parseWAVFormat checks the fmt chunk field by field.
func parseWAVFormat(b []byte) (*wavFile, error) {
	le := binary.LittleEndian
	format := int(le.Uint16(b[0:2]))
	w := &wavFile{
		format:   format,
		channels: int(le.Uint16(b[2:4])),
		rate:     int(le.Uint32(b[4:8])),
		bits:     int(le.Uint16(b[14:16])),
	}
	byteRate, blockAlign := int64(le.Uint32(b[8:12])), int(le.Uint16(b[12:14]))
	if format == wavExtensible {
		// The sub-format GUID's first two bytes are the real format tag.
		if len(b) < 40 || le.Uint16(b[16:18]) < 22 {
			return nil, invalid("bad WAV header: the fmt chunk says WAVE_FORMAT_EXTENSIBLE but has no sub-format")
		}
		w.format = int(le.Uint16(b[24:26]))
		if valid := int(le.Uint16(b[18:20])); valid != 0 && valid > w.bits {
			return nil, invalid("bad WAV header: valid bits per sample (%d) exceed the container's %d", valid, w.bits)
		}
	}
	switch {
	case w.format != wavPCM && w.format != wavFloat:
		return nil, invalid("unsupported WAV audio format %d: only PCM (1) and IEEE float (3) are taken", w.format)
	case w.channels < 1 || w.channels > 8:
		return nil, invalid("bad WAV header: channels is %d; 1 to 8 are taken", w.channels)
	case w.rate < 1000 || w.rate > maxSampleRate:
		return nil, invalid("bad WAV header: the sample rate is %d Hz; 1000 to %d are taken", w.rate, maxSampleRate)
	case w.format == wavPCM && w.bits != 8 && w.bits != 16 && w.bits != 24 && w.bits != 32:
		return nil, invalid("bad WAV header: bits per sample is %d; PCM takes 8, 16, 24 or 32", w.bits)
	case w.format == wavFloat && w.bits != 32:
		return nil, invalid("bad WAV header: bits per sample is %d; IEEE float takes 32", w.bits)
	case blockAlign != w.channels*w.bits/8:
		return nil, invalid("bad WAV header: block align is %d; %d channels of %d bits make %d", blockAlign, w.channels, w.bits, w.channels*w.bits/8)
	case byteRate != int64(w.rate)*int64(blockAlign):
		return nil, invalid("bad WAV header: the byte rate is %d; %d Hz × %d-byte frames make %d", byteRate, w.rate, blockAlign, int64(w.rate)*int64(blockAlign))
	}
	return w, nil
}

// sample returns frame i, channel c, as a float in [-1, 1].
func (w *wavFile) sample(i, c int) float32 {
	bytes := w.bits / 8
	p := w.data[(i*w.channels+c)*bytes:]
	switch {
	case w.format == wavFloat:
		v := math.Float32frombits(binary.LittleEndian.Uint32(p))
		if v != v { // NaN: silence rather than poison the encoder
			return 0
		}
		return max(-1, min(1, v))
	case bytes == 1: // 8-bit PCM is unsigned
		return float32(int(p[0])-128) / 128
	case bytes == 2:
		return float32(int16(binary.LittleEndian.Uint16(p))) / (1 << 15)
	case bytes == 3:
		v := int32(uint32(p[0])<<8|uint32(p[1])<<16|uint32(p[2])<<24) >> 8
		return float32(v) / (1 << 23)
	default:
		return float32(int32(binary.LittleEndian.Uint32(p))) / (1 << 31)
	}
}

// printable shows bytes of a header field in a message without control characters.
func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		out[i] = c
	}
	return string(out)
}
