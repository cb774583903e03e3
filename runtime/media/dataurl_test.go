package media

import (
	"bytes"
	"testing"
)

func TestParseDataURL(t *testing.T) {
	cases := []struct {
		url, mime string
		data      []byte
	}{
		{"data:image/png;base64,iVBORw0KGgo=", "image/png", []byte("\x89PNG\r\n\x1a\n")},
		{"data:image/png;base64,iVBORw0KGgo", "image/png", []byte("\x89PNG\r\n\x1a\n")},        // no padding
		{"DATA:Image/PNG;base64,iVBO\r\nRw0K\nGgo=", "image/png", []byte("\x89PNG\r\n\x1a\n")}, // wrapped, any case
		{"data:audio/wav;name=a.wav;base64,UklGRg==", "audio/wav", []byte("RIFF")},
		{"data:;base64,-_8=", "", []byte{0xfb, 0xff}}, // URL-safe alphabet
		{"data:text/plain,hello%20world", "text/plain", []byte("hello world")},
	}
	for _, c := range cases {
		mime, data, err := ParseDataURL(c.url)
		if err != nil || mime != c.mime || !bytes.Equal(data, c.data) {
			t.Errorf("ParseDataURL(%q) = %q, %q, %v; want %q, %q", c.url, mime, data, err, c.mime, c.data)
		}
	}
}

func TestParseDataURLRefusesBadBase64(t *testing.T) {
	cases := []struct{ url, say string }{
		{"data:image/png;base64,iVBOR*w0KGgo=", "not valid base64"},
		{"data:image/png;base64,i", "not valid base64"},
		{"data:image/png;base64,", "base64 data is empty"},
		{"data:image/png;base64", "no comma"},
		{"image/png;base64,iVBORw0KGgo=", "must start with \"data:\""},
	}
	for _, c := range cases {
		_, _, err := ParseDataURL(c.url)
		t.Run(c.say, func(t *testing.T) { mustRefuse(t, err, false, c.say) })
	}
}
