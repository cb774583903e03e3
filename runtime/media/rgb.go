package media

import (
	"image"
	"image/color"
)

// toRGB flattens img into 8-bit RGB rows, compositing any transparency on white (a clip
// encoder has no alpha channel, and white is what a viewer shows behind a transparent image).
// The common decoder outputs take a direct path; the rest go through color conversion.
func toRGB(img image.Image) []byte {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	out := make([]byte, 0, w*h*3)
	switch m := img.(type) {
	case *image.YCbCr:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				yi, ci := m.YOffset(x, y), m.COffset(x, y)
				r, g, bl := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				out = append(out, r, g, bl)
			}
		}
	case *image.NRGBA:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, y):][:w*4]
			for i := 0; i < len(row); i += 4 {
				a := uint32(row[i+3])
				out = append(out, overWhite(uint32(row[i])*a/255, a), overWhite(uint32(row[i+1])*a/255, a), overWhite(uint32(row[i+2])*a/255, a))
			}
		}
	case *image.RGBA:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, y):][:w*4]
			for i := 0; i < len(row); i += 4 {
				a := uint32(row[i+3])
				out = append(out, overWhite(uint32(row[i]), a), overWhite(uint32(row[i+1]), a), overWhite(uint32(row[i+2]), a))
			}
		}
	case *image.Gray:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for _, v := range m.Pix[m.PixOffset(b.Min.X, y):][:w] {
				out = append(out, v, v, v)
			}
		}
	case *image.Paletted:
		palette := paletteRGB(m.Palette)
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for _, idx := range m.Pix[m.PixOffset(b.Min.X, y):][:w] {
				out = append(out, palette[idx][:]...)
			}
		}
	default:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl, a := img.At(x, y).RGBA() // 16-bit, alpha-premultiplied
				out = append(out, overWhite16(r, a), overWhite16(g, a), overWhite16(bl, a))
			}
		}
	}
	return out
}

// overWhite composites an 8-bit premultiplied channel c of alpha a on white.
func overWhite(c, a uint32) byte { return byte(min(c+255-a, 255)) }

// overWhite16 composites a 16-bit premultiplied channel c of alpha a on white, to 8 bits.
func overWhite16(c, a uint32) byte { return byte(min(c+0xffff-a, 0xffff) >> 8) }

// paletteRGB is a palette's colors composited on white, for every index a pixel can hold (an
// index past the palette's end, which a damaged file may hold, shows black).
func paletteRGB(p color.Palette) *[256][3]byte {
	var out [256][3]byte
	for i := range out {
		c := color.Color(color.Black)
		if i < len(p) {
			c = p[i]
		}
		r, g, b, a := c.RGBA()
		out[i] = [3]byte{overWhite16(r, a), overWhite16(g, a), overWhite16(b, a)}
	}
	return &out
}
