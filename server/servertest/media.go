package servertest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"math"
)

// PNG is a w×h PNG filled with c.
func PNG(w, h int, c color.RGBA) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // encoding into memory does not fail
	}
	return buf.Bytes()
}

// NoisePNG is a w×h PNG of pseudo-random pixels from seed: two seeds give two different
// images to an encoder, as two photos would.
func NoisePNG(w, h int, seed uint32) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	x := seed*2654435761 + 1
	for i := 0; i < len(img.Pix); i++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img.Pix[i] = byte(x)
		if i%4 == 3 {
			img.Pix[i] = 255 // opaque
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// WAV is a 16 kHz mono 16-bit PCM WAV file of a sine at hz, seconds long.
func WAV(seconds, hz float64) []byte {
	const rate = 16000
	n := int(seconds * rate)
	var buf bytes.Buffer
	le := func(v any) { _ = binary.Write(&buf, binary.LittleEndian, v) }
	buf.WriteString("RIFF")
	le(uint32(36 + 2*n))
	buf.WriteString("WAVEfmt ")
	le(uint32(16))
	le(uint16(1)) // PCM
	le(uint16(1)) // mono
	le(uint32(rate))
	le(uint32(2 * rate)) // bytes a second
	le(uint16(2))        // bytes a frame
	le(uint16(16))       // bits a sample
	buf.WriteString("data")
	le(uint32(2 * n))
	for i := range n {
		le(int16(math.Sin(2*math.Pi*hz*float64(i)/rate) * 0.5 * math.MaxInt16))
	}
	return buf.Bytes()
}

// SVG is a tiny SVG image, which servers refuse (a script-capable vector format).
func SVG() []byte {
	return []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>`)
}

// Base64 is data in standard base64.
func Base64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

// DataURL is data as a base64 data URL of type mime.
func DataURL(mime string, data []byte) string { return "data:" + mime + ";base64," + Base64(data) }
