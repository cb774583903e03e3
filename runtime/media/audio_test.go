package media

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
	"github.com/mewkiz/flac/meta"

	"github.com/superfluid/superfluid/runtime/llm"
)

// checkTone asserts m is 16 kHz mono audio of about seconds holding a freq Hz tone of about
// amp, with nothing much at the other frequencies probed.
func checkTone(t *testing.T, m llm.Media, seconds, freq, amp float64) {
	t.Helper()
	if m.Kind != llm.MediaAudio || len(m.Hash) != 64 {
		t.Fatalf("kind %q, hash %q", m.Kind, m.Hash)
	}
	if got := Duration(m).Seconds(); math.Abs(got-seconds) > 0.1 {
		t.Errorf("duration %.3fs; want about %.3fs", got, seconds)
	}
	x := samples(m)
	// Skip the edges (filter ramp, encoder padding).
	x = x[len(x)/10 : len(x)*9/10]
	if got := amplitude(x, freq, llm.AudioSampleRate); math.Abs(got-amp) > 0.05*amp+0.01 {
		t.Errorf("the %.0f Hz component is %.3f; want about %.3f", freq, got, amp)
	}
	for _, other := range []float64{freq / 2, freq * 1.5, freq * 2, 3000} {
		if got := amplitude(x, other, llm.AudioSampleRate); got > 0.02*amp {
			t.Errorf("%.0f Hz shows %.4f beside a %.0f Hz tone of %.2f", other, got, freq, amp)
		}
	}
}

func TestDecodeWAVFormats(t *testing.T) {
	cases := []struct {
		name string
		spec wavSpec
	}{
		{"8-bit PCM mono", wavSpec{format: wavPCM, channels: 1, rate: 16000, bits: 8}},
		{"16-bit PCM stereo", wavSpec{format: wavPCM, channels: 2, rate: 16000, bits: 16}},
		{"24-bit PCM mono 48 kHz", wavSpec{format: wavPCM, channels: 1, rate: 48000, bits: 24}},
		{"32-bit PCM 6 channels", wavSpec{format: wavPCM, channels: 6, rate: 22050, bits: 32}},
		{"32-bit float stereo 8 kHz", wavSpec{format: wavFloat, channels: 2, rate: 8000, bits: 32}},
		{"extensible 16-bit", wavSpec{format: wavPCM, channels: 2, rate: 16000, bits: 16, extensible: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := writeWAV(c.spec, sine(c.spec.rate/2, c.spec.channels, 440, float64(c.spec.rate), 0.5))
			m, err := DecodeAudio(data, "audio/wav", Limits{})
			if err != nil {
				t.Fatal(err)
			}
			checkTone(t, m, 0.5, 440, 0.5)
		})
	}
}

func TestResample44kStereoTo16kMono(t *testing.T) {
	// 2 s of 44.1 kHz stereo: a 1 kHz tone in both channels, plus a 10 kHz tone in antiphase
	// (it cancels in the downmix) and a 12 kHz one in the left only (above 16 kHz's Nyquist: it
	// must be filtered out, not folded back to 4 kHz).
	const rate = 44100
	frames := make([][]float64, 2*rate)
	for i := range frames {
		ts := float64(i) / rate
		tone := 0.4 * math.Sin(2*math.Pi*1000*ts)
		anti := 0.2 * math.Sin(2*math.Pi*10000*ts)
		high := 0.3 * math.Sin(2*math.Pi*12000*ts)
		frames[i] = []float64{tone + anti + high, tone - anti}
	}
	m, err := DecodeAudio(writeWAV(wavSpec{format: wavFloat, channels: 2, rate: rate, bits: 32}, frames), "", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * llm.AudioSampleRate; m.Samples() != want {
		t.Errorf("%d samples; want %d (2 s at 16 kHz)", m.Samples(), want)
	}
	checkTone(t, m, 2, 1000, 0.4)
	x := samples(m)[3200:28800]
	if alias := amplitude(x, 4000, llm.AudioSampleRate); alias > 1e-3 {
		t.Errorf("the 12 kHz tone folded back to 4 kHz at %.5f (of 0.15 after the downmix): the low-pass is missing", alias)
	}
}

func TestResampleUpFrom8kAndOddRates(t *testing.T) {
	for _, rate := range []int{8000, 11025, 44101} { // 44101 Hz has 16000 phases: quantized
		m, err := DecodeAudio(writeWAV(wavSpec{format: wavFloat, channels: 1, rate: rate, bits: 32}, sine(rate, 1, 700, float64(rate), 0.6)), "", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		checkTone(t, m, 1, 700, 0.6)
	}
}

func TestTwoHourWAVRefusedFromItsHeader(t *testing.T) {
	// A 44-byte file whose header says 2 hours of 16 kHz 16-bit mono follow.
	spec := wavSpec{format: wavPCM, channels: 1, rate: 16000, bits: 16}
	data := wavBytes(spec, nil, 2*3600*16000*2)
	var err error
	used := allocated(func() { _, err = DecodeAudio(data, "audio/wav", Limits{}) })
	mustRefuse(t, err, true, "2h0m0s long", "limit is 600 seconds")
	if used > 64<<10 {
		t.Errorf("refusing a %d-byte header allocated %d bytes", len(data), used)
	}
}

func TestWAVWithWrongHeader(t *testing.T) {
	good := writeWAV(wavSpec{format: wavPCM, channels: 1, rate: 16000, bits: 16}, sine(1600, 1, 440, 16000, 0.5))
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	put16 := func(b []byte, at int, v uint16) []byte { b[at], b[at+1] = byte(v), byte(v>>8); return b }
	cases := []struct {
		name  string
		data  []byte
		words []string
	}{
		{"RIFF magic", edit(func(b []byte) []byte { copy(b, "RIFX"); return b }), []string{"WAV", "RIFF"}},
		{"form type", edit(func(b []byte) []byte { copy(b[8:], "AVI "); return b }), []string{"form type", "WAVE"}},
		{"audio format", edit(func(b []byte) []byte { return put16(b, 20, 2) }), []string{"audio format 2"}},
		{"channels", edit(func(b []byte) []byte { return put16(b, 22, 0) }), []string{"channels is 0"}},
		{"sample rate", edit(func(b []byte) []byte { b[24], b[25], b[26], b[27] = 0x10, 0, 0, 0; return b }), []string{"sample rate is 16 Hz"}},
		{"byte rate", edit(func(b []byte) []byte { b[28]++; return b }), []string{"byte rate"}},
		{"block align", edit(func(b []byte) []byte { return put16(b, 32, 3) }), []string{"block align is 3"}},
		{"bits per sample", edit(func(b []byte) []byte { return put16(b, 34, 12) }), []string{"bits per sample is 12"}},
		{"fmt chunk missing", edit(func(b []byte) []byte { copy(b[12:], "junk"); return b }), []string{"data chunk comes before the fmt chunk"}},
		{"data chunk missing", edit(func(b []byte) []byte { copy(b[36:], "junk"); return b }), []string{"no data chunk"}},
		{"data truncated", good[:len(good)-1000], []string{"truncated WAV", "3200 bytes"}},
		{"no samples", wavBytes(wavSpec{format: wavPCM, channels: 1, rate: 16000, bits: 16}, []byte{1}, 1), []string{"no samples"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Declared WAV (as input_audio's format says), so the header is read field by field.
			_, err := DecodeAudio(c.data, "audio/wav", Limits{})
			mustRefuse(t, err, false, c.words...)
		})
	}
}

func TestEmptyAndUnknownAudio(t *testing.T) {
	_, err := DecodeAudio(nil, "audio/wav", Limits{})
	mustRefuse(t, err, false, "empty")
	_, err = DecodeAudio([]byte("OggS\x00\x02 not really"), "", Limits{})
	mustRefuse(t, err, false, "not WAV, MP3 or FLAC")
	_, err = DecodeAudio([]byte("OggS\x00\x02"), "audio/ogg", Limits{})
	mustRefuse(t, err, false, "audio/ogg is not a supported audio type")
	wav := writeWAV(wavSpec{format: wavPCM, channels: 1, rate: 16000, bits: 16}, sine(160, 1, 440, 16000, 0.5))
	_, err = DecodeAudio(wav, "audio/mpeg", Limits{})
	mustRefuse(t, err, false, "declared audio/mpeg (MP3)", "bytes are WAV")
	_, err = DecodeAudio(wav, "", Limits{MaxBytes: 100})
	mustRefuse(t, err, true, "the limit is")
}

func TestDecodeMP3(t *testing.T) {
	// ffmpeg's sine source has amplitude 1/8.
	stereo, err := DecodeAudio(readFixture(t, "sine1k-44k-stereo.mp3"), "audio/mpeg", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	checkTone(t, stereo, 1, 1000, 0.125)
	data := readFixture(t, "sine440-24k-mono.mp3")
	mono, err := DecodeAudio(data, "mp3", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	checkTone(t, mono, 2, 440, 0.125)
	_, err = DecodeAudio(data, "audio/mpeg", Limits{MaxAudioSeconds: 1})
	mustRefuse(t, err, true, "MP3 audio is 2s long", "limit is 1 seconds")
}

// encodeFLAC writes frames (16-bit, at rate) as FLAC with the real encoder.
func encodeFLAC(t *testing.T, frames [][]float64, rate int) []byte {
	t.Helper()
	channels := len(frames[0])
	info := &meta.StreamInfo{BlockSizeMin: 4096, BlockSizeMax: 4096, SampleRate: uint32(rate), NChannels: uint8(channels), BitsPerSample: 16, NSamples: uint64(len(frames))}
	var buf bytes.Buffer
	enc, err := flac.NewEncoder(&buf, info)
	if err != nil {
		t.Fatal(err)
	}
	chans := frame.ChannelsLR
	if channels == 1 {
		chans = frame.ChannelsMono
	}
	for start := 0; start < len(frames); start += 4096 {
		block := frames[start:min(start+4096, len(frames))]
		subs := make([]*frame.Subframe, channels)
		for c := range subs {
			s := make([]int32, len(block))
			for i, f := range block {
				s[i] = int32(math.Round(f[c] * 32767))
			}
			subs[c] = &frame.Subframe{SubHeader: frame.SubHeader{Pred: frame.PredVerbatim}, Samples: s, NSamples: len(s)}
		}
		fr := &frame.Frame{Header: frame.Header{HasFixedBlockSize: true, BlockSize: uint16(len(block)), SampleRate: uint32(rate),
			Channels: chans, BitsPerSample: 16, Num: uint64(start / 4096)}, Subframes: subs}
		if err := enc.WriteFrame(fr); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeFLAC(t *testing.T) {
	data := encodeFLAC(t, sine(48000*3/2, 2, 440, 48000, 0.5), 48000)
	m, err := DecodeAudio(data, "audio/flac", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	checkTone(t, m, 1.5, 440, 0.5)
	_, err = DecodeAudio(data, "flac", Limits{MaxAudioSeconds: 1})
	mustRefuse(t, err, true, "FLAC audio is 2s long", "limit is 1 seconds")
}

// id3Tag is an ID3v2.4 tag holding one text frame, padded to size bytes after its header.
func id3Tag(size int) []byte {
	tag := []byte{'I', 'D', '3', 4, 0, 0, byte(size >> 21 & 0x7f), byte(size >> 14 & 0x7f), byte(size >> 7 & 0x7f), byte(size & 0x7f)}
	frame := append([]byte("TIT2\x00\x00\x00\x06\x00\x00\x03tone\x00"), make([]byte, size)...)
	return append(tag, frame[:size]...)
}

func TestAudioAfterAnID3Tag(t *testing.T) {
	// 300 bytes of tag: its size bytes (0, 0, 2, 44) only add up right with the 10-byte header
	// added after the 7-bit fields are joined.
	flacData := append(id3Tag(300), encodeFLAC(t, sine(16000, 1, 440, 16000, 0.5), 16000)...)
	m, err := DecodeAudio(flacData, "", Limits{})
	if err != nil {
		t.Fatalf("FLAC after an ID3 tag: %v", err)
	}
	checkTone(t, m, 1, 440, 0.5)
	mp3Data := append(id3Tag(300), readFixture(t, "sine1k-44k-stereo.mp3")...)
	m, err = DecodeAudio(mp3Data, "audio/mpeg", Limits{})
	if err != nil {
		t.Fatalf("MP3 after an ID3 tag: %v", err)
	}
	checkTone(t, m, 1, 1000, 0.125)
}

func TestResamplerBankStaysSmallForOddRates(t *testing.T) {
	// An odd rate has as many exact phases as the output rate (16000); the bank is quantized
	// instead, so a hostile header cannot make it cost seconds to build.
	for _, rate := range []int{191999, 44101, 8001} {
		r := newResampler(rate, llm.AudioSampleRate)
		taps := 0
		for _, p := range r.bank {
			taps += len(p)
		}
		if taps > maxBankTaps || len(r.bank) < 400 {
			t.Errorf("%d Hz: %d phases, %d taps; want at least 400 phases within %d taps", rate, len(r.bank), taps, maxBankTaps)
		}
	}
}

func TestDurationOfAnImageIsZero(t *testing.T) {
	if d := Duration(llm.Media{Kind: llm.MediaImage, PCM: make([]byte, 64)}); d != 0 {
		t.Errorf("Duration(image) = %v", d)
	}
	if d := Duration(llm.Media{Kind: llm.MediaAudio, PCM: make([]byte, 4*llm.AudioSampleRate/2)}); d != 500*time.Millisecond {
		t.Errorf("Duration(half a second) = %v", d)
	}
}
