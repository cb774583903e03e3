package llamacpp

import (
	"testing"
)

// TestMediaEndsThePrompt: a prompt that ends with an image (a lone user turn of text then an
// image, under the fallback template) replies from the image's last row: the reply differs from
// the text alone and from another image's, prompt_tokens counts the image, and re-sending it
// reuses the text but recomputes the whole image (a cached prefix never ends inside a chunk),
// replying the same.
func TestMediaEndsThePrompt(t *testing.T) {
	f := writeMediaFiles(t)[0]
	e := loadMedia(t, f.model, f.vision, 1)
	plain := mustGenerate(t, e, greedy(mediaPrefix, 16))
	imgA, imgB := testImage(40, 30, 1), testImage(40, 30, 2)
	a := mustGenerate(t, e, mediaReq(mediaPrefix, "", 16, imgA))
	head, _ := textTokens(t, e, mediaPrefix, "")
	if want := head + f.visionTokens; a.started.PromptTokens != want {
		t.Errorf("prompt tokens %d, want %d text + %d image positions", a.started.PromptTokens, head, f.visionTokens)
	}
	again := mustGenerate(t, e, mediaReq(mediaPrefix, "", 16, imgA))
	if again.started.CachedTokens != head || again.text != a.text {
		t.Errorf("re-sent: cached %d, reply %q; want the %d text tokens cached and the reply %q", again.started.CachedTokens, again.text, head, a.text)
	}
	b := mustGenerate(t, e, mediaReq(mediaPrefix, "", 16, imgB))
	t.Logf("plain %q\nimage A %q\nimage B %q", plain.text, a.text, b.text)
	if a.text == "" || a.text == plain.text || a.text == b.text {
		t.Errorf("an image at the end changed nothing: plain %q, image A %q, image B %q", plain.text, a.text, b.text)
	}
}
