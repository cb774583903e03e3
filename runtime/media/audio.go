package media

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/hajimehoshi/go-mp3"
	"github.com/mewkiz/flac"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Audio formats taken.
const (
	formatWAV  = "WAV"
	formatMP3  = "MP3"
	formatFLAC = "FLAC"
)

// audioTypes maps the MIME types (and OpenAI's input_audio format names) clients declare.
var audioTypes = map[string]string{
	"audio/wav": formatWAV, "audio/x-wav": formatWAV, "audio/wave": formatWAV, "audio/vnd.wave": formatWAV, "wav": formatWAV,
	"audio/mpeg": formatMP3, "audio/mp3": formatMP3, "audio/mpeg3": formatMP3, "audio/x-mpeg-3": formatMP3, "mp3": formatMP3,
	"audio/flac": formatFLAC, "audio/x-flac": formatFLAC, "flac": formatFLAC,
}

const audioFormatsHint = "send WAV, MP3 or FLAC"

// DecodeAudio decodes a WAV (PCM 8/16/24/32-bit or 32-bit float), MP3 or FLAC file into mono
// PCM at llm.AudioSampleRate: channels averaged, then resampled with a windowed sinc (see
// resample.go). The type is sniffed from the bytes; a declared mime that disagrees is refused.
// A clip longer than the limit is refused from its header where the format states its length
// (WAV, FLAC, MP3's frame count) and while decoding otherwise.
func DecodeAudio(data []byte, mime string, lim Limits) (llm.Media, error) {
	lim = lim.withDefaults()
	if int64(len(data)) > lim.MaxBytes {
		return llm.Media{}, tooLarge("the audio file is %s; the limit is %s", mib(int64(len(data))), mib(lim.MaxBytes))
	}
	if len(data) == 0 {
		return llm.Media{}, invalid("the audio file is empty (0 bytes)")
	}
	format, err := sniffAudio(data, mime)
	if err != nil {
		return llm.Media{}, err
	}
	var pcm []float32
	switch format {
	case formatWAV:
		pcm, err = decodeWAV(data, lim.MaxAudioSeconds)
	case formatMP3:
		pcm, err = guard(formatMP3, func() ([]float32, error) { return decodeMP3(data, lim.MaxAudioSeconds) })
	default:
		pcm, err = guard(formatFLAC, func() ([]float32, error) { return decodeFLAC(data, lim.MaxAudioSeconds) })
	}
	if err != nil {
		return llm.Media{}, err
	}
	if len(pcm) == 0 {
		return llm.Media{}, invalid("the %s file holds no audio samples", format)
	}
	out := make([]byte, 4*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(max(-1, min(1, v))))
	}
	return llm.Media{Kind: llm.MediaAudio, Hash: audioHash(out), PCM: out}, nil
}

// sniffAudio names the audio format the bytes are, refusing a declared type that disagrees.
func sniffAudio(data []byte, declared string) (string, error) {
	declared = canonicalMIME(declared)
	want, known := audioTypes[declared]
	if declared != "" && declared != "application/octet-stream" && !known {
		return "", invalid("%s is not a supported audio type; %s", declared, audioFormatsHint)
	}
	got := audioMagic(data)
	if got == "" && (want == formatWAV || bytes.HasPrefix(data, []byte("RIFF"))) {
		got = formatWAV // let the WAV parser name the header field that is wrong
	}
	if got == "" {
		seen := describeSniffed(http.DetectContentType(data))
		if known {
			return "", invalid("the audio is declared %s but its bytes are %s; %s", declared, seen, audioFormatsHint)
		}
		return "", invalid("the audio's bytes are %s, not WAV, MP3 or FLAC; %s", seen, audioFormatsHint)
	}
	if known && want != got {
		return "", invalid("the audio is declared %s (%s) but its bytes are %s; declare the format it really is", declared, want, got)
	}
	return got, nil
}

// audioMagic recognizes a format from its first bytes ("" when none).
func audioMagic(b []byte) string {
	switch {
	case len(b) >= 12 && string(b[0:4]) == "RIFF" && string(b[8:12]) == "WAVE":
		return formatWAV
	case bytes.HasPrefix(b, []byte("fLaC")):
		return formatFLAC
	case id3End(b) > 0:
		// An ID3v2 tag may precede MP3 frames or, rarely, FLAC.
		if bytes.HasPrefix(b[id3End(b):], []byte("fLaC")) {
			return formatFLAC
		}
		return formatMP3
	case len(b) >= 2 && b[0] == 0xFF && b[1]&0xE0 == 0xE0 && (b[1]>>1)&3 == 1: // MPEG frame sync, layer III
		return formatMP3
	}
	return ""
}

// id3End is where the ID3v2 tag at the start of b ends (its size is four 7-bit bytes after a
// 10-byte header), or 0 when b has none.
func id3End(b []byte) int {
	if len(b) < 10 || string(b[0:3]) != "ID3" {
		return 0
	}
	return min(len(b), 10+(int(b[6]&0x7f)<<21|int(b[7]&0x7f)<<14|int(b[8]&0x7f)<<7|int(b[9]&0x7f)))
}

// guard runs a third-party decoder, turning a panic on hostile bytes into a refusal.
func guard(format string, decode func() ([]float32, error)) (pcm []float32, err error) {
	defer func() {
		if p := recover(); p != nil {
			pcm, err = nil, invalid("damaged %s: the decoder failed on it", format)
		}
	}()
	return decode()
}

// monoSink downmixes interleaved frames into the resampler, refusing a clip once it runs
// past the limit (for formats whose length is known only by decoding).
type monoSink struct {
	format     string
	channels   int
	rate       int
	maxFrames  int64
	maxSeconds int
	frames     int64
	chunk      []float32
	rs         *resampler
}

func newMonoSink(format string, channels, rate, maxSeconds int) (*monoSink, error) {
	if rate < 1000 || rate > maxSampleRate {
		return nil, invalid("the %s audio's sample rate is %d Hz; 1000 to %d are taken", format, rate, maxSampleRate)
	}
	if channels < 1 || channels > 8 {
		return nil, invalid("the %s audio has %d channels; 1 to 8 are taken", format, channels)
	}
	return &monoSink{format: format, channels: channels, rate: rate, maxFrames: int64(maxSeconds) * int64(rate),
		maxSeconds: maxSeconds, chunk: make([]float32, 0, 4096), rs: newResampler(rate, llm.AudioSampleRate)}, nil
}

// add takes one frame's mean.
func (s *monoSink) add(mean float32) error {
	s.frames++
	if s.frames > s.maxFrames {
		return tooLarge("the %s audio is longer than %d seconds, the limit", s.format, s.maxSeconds)
	}
	s.chunk = append(s.chunk, mean)
	if len(s.chunk) == cap(s.chunk) {
		s.rs.push(s.chunk)
		s.chunk = s.chunk[:0]
	}
	return nil
}

func (s *monoSink) finish() []float32 {
	s.rs.push(s.chunk)
	return s.rs.finish()
}

func decodeWAV(data []byte, maxSeconds int) ([]float32, error) {
	w, err := parseWAV(data, maxSeconds)
	if err != nil {
		return nil, err
	}
	sink, err := newMonoSink(formatWAV, w.channels, w.rate, maxSeconds)
	if err != nil {
		return nil, err
	}
	for i := range w.frames() {
		var sum float32
		for c := range w.channels {
			sum += w.sample(i, c)
		}
		if err := sink.add(sum / float32(w.channels)); err != nil {
			return nil, err
		}
	}
	return sink.finish(), nil
}

// decodeMP3 decodes with go-mp3, which has one known fault: some low-bitrate MPEG-2 files at
// 22.05 kHz (measured: lame at 24 and 32 kbit/s) decode to noise without an error
// (hajimehoshi/go-mp3#39); 16 and 24 kHz and every MPEG-1 rate decode within 71 dB of ffmpeg.
func decodeMP3(data []byte, maxSeconds int) ([]float32, error) {
	d, err := mp3.NewDecoder(bytes.NewReader(data))
	if err != nil {
		return nil, invalid("damaged MP3: %v", err)
	}
	// go-mp3 always gives 16-bit stereo; with a seekable source it counts the frames first.
	const frameBytes = 4
	if n := d.Length(); n > 0 && d.SampleRate() > 0 {
		if seconds := float64(n/frameBytes) / float64(d.SampleRate()); seconds > float64(maxSeconds) {
			return nil, tooLarge("the MP3 audio is %s long; the limit is %d seconds", clock(seconds), maxSeconds)
		}
	}
	sink, err := newMonoSink(formatMP3, 2, d.SampleRate(), maxSeconds)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 4096*frameBytes)
	for {
		n, err := io.ReadFull(d, buf)
		for i := 0; i+frameBytes <= n; i += frameBytes {
			l, r := int16(binary.LittleEndian.Uint16(buf[i:])), int16(binary.LittleEndian.Uint16(buf[i+2:]))
			if err := sink.add((float32(l) + float32(r)) / (2 << 15)); err != nil {
				return nil, err
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, invalid("damaged MP3: %v", err)
		}
	}
	return sink.finish(), nil
}

func decodeFLAC(data []byte, maxSeconds int) ([]float32, error) {
	stream, err := flac.New(bytes.NewReader(data)) // it skips a leading ID3 tag itself
	if err != nil {
		return nil, invalid("damaged FLAC: %v", err)
	}
	info := stream.Info
	if info.NSamples > 0 {
		if seconds := float64(info.NSamples) / float64(max(info.SampleRate, 1)); seconds > float64(maxSeconds) {
			return nil, tooLarge("the FLAC audio is %s long; the limit is %d seconds", clock(seconds), maxSeconds)
		}
	}
	sink, err := newMonoSink(formatFLAC, int(info.NChannels), int(info.SampleRate), maxSeconds)
	if err != nil {
		return nil, err
	}
	for {
		f, err := stream.ParseNext()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, invalid("damaged FLAC: %v", err)
		}
		if len(f.Subframes) != sink.channels || f.BitsPerSample < 4 || f.BitsPerSample > 32 {
			return nil, invalid("damaged FLAC: a frame has %d channels of %d bits; the stream says %d", len(f.Subframes), f.BitsPerSample, sink.channels)
		}
		scale := float32(math.Ldexp(1, int(f.BitsPerSample)-1))
		for i := range f.Subframes[0].Samples {
			var sum float32
			for _, sub := range f.Subframes {
				if i < len(sub.Samples) {
					sum += float32(sub.Samples[i]) / scale
				}
			}
			if err := sink.add(sum / float32(sink.channels)); err != nil {
				return nil, err
			}
		}
	}
	return sink.finish(), nil
}

// audioHash identifies decoded samples (llm.Media.Hash).
func audioHash(pcm []byte) string {
	sum := sha256.New()
	var shape [8]byte
	binary.LittleEndian.PutUint32(shape[:4], uint32(llm.AudioSampleRate))
	binary.LittleEndian.PutUint32(shape[4:], uint32(len(pcm)/4))
	sum.Write([]byte(llm.MediaAudio + "\x00"))
	sum.Write(shape[:])
	sum.Write(pcm)
	return hex.EncodeToString(sum.Sum(nil))
}

// clock words a duration in seconds for messages ("2h0m0s").
func clock(seconds float64) string {
	return fmt.Sprint(time.Duration(seconds * float64(time.Second)).Round(time.Second))
}
