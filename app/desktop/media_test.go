package desktop

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/tray"
)

// TestAttachmentsBecomeMediaParts: a playground turn's attachments reach the core as that
// message's media parts, in order, before its text, named for errors; a file of another type
// is refused as invalid input, naming it.
func TestAttachmentsBecomeMediaParts(t *testing.T) {
	png, wav := []byte("\x89PNG fake"), []byte("RIFF fake")
	req, err := chatRequest(tray.ChatSettings{Model: "llava", Temperature: 0, MaxTokens: 8}, []tray.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "What is this?", Attachments: []tray.Attachment{
			{Name: "cat.png", MIME: "image/png", Data: png}, {Name: "meow.wav", MIME: "audio/wav", Data: wav}}},
		{Role: "assistant", Content: "A cat."},
		{Role: "user", Content: "Sure?"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Messages) != 4 || len(req.Messages[0].Media) != 0 || len(req.Messages[2].Media) != 0 || len(req.Messages[3].Media) != 0 {
		t.Fatalf("messages %+v", req.Messages)
	}
	got := req.Messages[1]
	want := []llm.MediaPart{
		{At: 0, Kind: llm.MediaImage, MIME: "image/png", Data: png, Where: "attachment cat.png"},
		{At: 0, Kind: llm.MediaAudio, MIME: "audio/wav", Data: wav, Where: "attachment meow.wav"},
	}
	if got.Content != "What is this?" || len(got.Media) != len(want) {
		t.Fatalf("user turn %q with %d parts", got.Content, len(got.Media))
	}
	for i, w := range want {
		g := got.Media[i]
		if g.At != w.At || g.Kind != w.Kind || g.MIME != w.MIME || !bytes.Equal(g.Data, w.Data) || g.Where != w.Where || g.URL != "" {
			t.Errorf("part %d: %+v, want %+v", i, g, w)
		}
	}
	if req.Model != "llava" || req.Endpoint != "playground" || req.Generation.MaxTokens != 8 {
		t.Fatalf("request %+v", req)
	}

	_, err = chatRequest(tray.ChatSettings{Model: "llava"}, []tray.Message{
		{Role: "user", Content: "x", Attachments: []tray.Attachment{{Name: "notes.txt", MIME: "text/plain", Data: []byte("hi")}}}})
	if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "attachment notes.txt") {
		t.Fatalf("a text file: %v", err)
	}
}
