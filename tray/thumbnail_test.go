package tray

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"testing"
)

// TestThumbnailRefusesBombs: an image whose header claims 100 megapixels is not decoded for its
// thumbnail (the chip shows an icon); a small image keeps its size; a GIF shows its first frame.
func TestThumbnailRefusesBombs(t *testing.T) {
	if thumbnail(hugePNGHeader(10000, 10000)) != nil {
		t.Fatal("a 100-megapixel PNG was decoded for a thumbnail")
	}
	if thumbnail([]byte("not an image")) != nil {
		t.Fatal("garbage has a thumbnail")
	}
	if img := thumbnail(pngOf(t, 10, 40, color.RGBA{1, 2, 3, 255})); img == nil || img.Bounds().Dx() != 10 || img.Bounds().Dy() != 40 {
		t.Fatalf("a small image is kept at its size: %v", img)
	}
	var anim bytes.Buffer
	pal := color.Palette{color.RGBA{255, 0, 0, 255}, color.RGBA{0, 0, 255, 255}}
	frame := func(i uint8) *image.Paletted {
		p := image.NewPaletted(image.Rect(0, 0, 4, 4), pal)
		for j := range p.Pix {
			p.Pix[j] = i
		}
		return p
	}
	if err := gif.EncodeAll(&anim, &gif.GIF{Image: []*image.Paletted{frame(0), frame(1)}, Delay: []int{1, 1}}); err != nil {
		t.Fatal(err)
	}
	if img := thumbnail(anim.Bytes()); img == nil || color.RGBAModel.Convert(img.At(1, 1)) != (color.RGBA{255, 0, 0, 255}) {
		t.Fatalf("a GIF's thumbnail is not its first frame: %v", img)
	}
}

// hugePNGHeader is a PNG signature and IHDR claiming w×h, with no pixels.
func hugePNGHeader(w, h uint32) []byte {
	var ihdr bytes.Buffer
	ihdr.WriteString("IHDR")
	binary.Write(&ihdr, binary.BigEndian, w)
	binary.Write(&ihdr, binary.BigEndian, h)
	ihdr.Write([]byte{8, 2, 0, 0, 0})
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	binary.Write(&b, binary.BigEndian, uint32(13))
	b.Write(ihdr.Bytes())
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(ihdr.Bytes()))
	return b.Bytes()
}
