package forward

import (
	"bytes"
	"io"
	"mime/multipart"
	"testing"
)

// TestFormWithModel: a multipart body's model field gets the served name and every other part
// comes through byte for byte (a binary file holding CRLFs and a fake boundary-like line among
// them); a body with no model field, or one that does not parse, is relayed as is.
func TestFormWithModel(t *testing.T) {
	file := []byte("RIFF\x00\x01\r\n--not-the-boundary\r\n\xff\xfe")
	form := func(fields ...string) ([]byte, string) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		fw, _ := w.CreateFormFile("file", "a.wav")
		_, _ = fw.Write(file)
		for i := 0; i+1 < len(fields); i += 2 {
			_ = w.WriteField(fields[i], fields[i+1])
		}
		_ = w.Close()
		return b.Bytes(), w.Boundary()
	}

	body, boundary := form("model", "alias", "language", "de")
	out := formWithModel(body, boundary, "served")
	got := map[string]string{}
	mr := multipart.NewReader(bytes.NewReader(out), boundary)
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the rewritten body does not parse: %v\n%q", err, out)
		}
		v, _ := io.ReadAll(p)
		got[p.FormName()] = string(v)
	}
	if got["model"] != "served" || got["language"] != "de" || got["file"] != string(file) || len(got) != 3 {
		t.Fatalf("rewritten form %q", got)
	}

	if body, boundary := form("language", "de"); !bytes.Equal(formWithModel(body, boundary, "served"), body) {
		t.Fatal("a form without a model field was changed")
	}
	cut := body[:len(body)/2]
	if !bytes.Equal(formWithModel(cut, boundary, "served"), cut) {
		t.Fatal("a cut body was changed")
	}
}
