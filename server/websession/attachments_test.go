package websession

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// postFile posts data as an attachment named name of type mime; it returns the status and body.
func postFile(t *testing.T, srv *httptest.Server, name, mime string, data []byte, token string) (int, []byte) {
	t.Helper()
	resp, b := post(t, srv, "/web/attachments?name="+name, string(data), map[string]string{"Authorization": "Bearer " + token, "Content-Type": mime})
	return resp.StatusCode, b
}

func uploadID(t *testing.T, srv *httptest.Server, name, mime string, data []byte) string {
	t.Helper()
	status, b := postFile(t, srv, name, mime, data, testToken)
	var r struct {
		ID, Name, MIME string
		Size           int
	}
	if err := json.Unmarshal(b, &r); status != 200 || err != nil || r.ID == "" || r.Name != name || r.MIME != mime || r.Size != len(data) {
		t.Fatalf("upload %s: %d %s", name, status, b)
	}
	return r.ID
}

// TestAttachmentsReachTheSession: a file bigger than a frame is uploaded once and named by id
// in a chat, a small one rides inline as base64; the session gets both, bytes intact, in order,
// on their turn, over POST /web/rpc and the WebSocket alike.
func TestAttachmentsReachTheSession(t *testing.T) {
	f, srv, _ := startFake(t, Config{})
	big := bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 7}, MaxFrame/2) // 2.5 MiB: no frame holds it
	small := []byte("RIFF....WAVEfmt ")
	id := uploadID(t, srv, "big.png", "image/png", big)
	msgs := []map[string]any{
		{"role": "user", "content": "What is in these?", "attachments": []map[string]any{
			{"id": id, "name": "big.png"}, {"name": "hi.wav", "mime": "audio/wav", "data": base64.StdEncoding.EncodeToString(small)}}},
		{"role": "assistant", "content": "A picture and a sound."},
		{"role": "user", "content": "Sure?"},
	}
	check := func(via string) {
		t.Helper()
		f.mu.Lock()
		got := f.lastMsgs
		f.lastMsgs = nil
		f.mu.Unlock()
		if len(got) != 4 || got[0].Role != "system" || len(got[1].Attachments) != 2 || len(got[2].Attachments) != 0 || len(got[3].Attachments) != 0 {
			t.Fatalf("%s: the session got %d messages: %+v", via, len(got), got)
		}
		a, b := got[1].Attachments[0], got[1].Attachments[1]
		if a.Name != "big.png" || a.MIME != "image/png" || !bytes.Equal(a.Data, big) || b.Name != "hi.wav" || b.MIME != "audio/wav" || !bytes.Equal(b.Data, small) {
			t.Fatalf("%s: attachments %s/%s (%d bytes), %s/%s (%d bytes)", via, a.Name, a.MIME, len(a.Data), b.Name, b.MIME, len(b.Data))
		}
	}
	if r := rpc(t, srv, "chat", map[string]any{"model": "tiny", "system": "Look.", "messages": msgs}); r.Error != nil {
		t.Fatalf("chat: %+v", r.Error)
	}
	check("rpc")

	c := mustDial(t, srv)
	frame, _ := json.Marshal(map[string]any{"id": "c1", "method": "chat", "params": map[string]any{"model": "tiny", "system": "Look.", "messages": msgs}})
	send(t, c, string(frame))
	for {
		ev := next(t, c)
		if ev["event"] == "done" {
			break
		}
		if ev["event"] != "piece" {
			t.Fatalf("ws chat: %v", ev)
		}
	}
	check("ws")

	if r := rpc(t, srv, "limits", nil); r.Error != nil || !strings.Contains(string(r.Result.(json.RawMessage)), `"max_attachment":33554432`) {
		t.Fatalf("limits: %+v %s", r.Error, r.Result)
	}
}

// TestAttachmentRefusals: each bad upload or attachment gets a clear refusal, and the listener
// goes on serving.
func TestAttachmentRefusals(t *testing.T) {
	_, srv, _ := startFake(t, Config{MaxAttachment: 1000})
	for _, c := range []struct {
		name, mime, token string
		data              []byte
		status            int
		code, says        string
	}{
		{"a.png", "image/png", "wrong", []byte("x"), 401, "invalid_token", "token"},
		{"notes.txt", "text/plain", testToken, []byte("hi"), 415, "unsupported_attachment", "image or audio"},
		{"a.png", "", testToken, []byte("hi"), 415, "unsupported_attachment", "image or audio"},
		{"huge.png", "image/png", testToken, make([]byte, 1001), 413, "attachment_too_large", "huge.png is over"},
		{"empty.wav", "audio/wav", testToken, nil, 400, "empty_attachment", "empty.wav is empty"},
	} {
		status, b := postFile(t, srv, c.name, c.mime, c.data, c.token)
		if status != c.status || errorCode(t, b) != c.code || !strings.Contains(string(b), c.says) {
			t.Errorf("%s (%s): %d %s, want %d %s", c.name, c.mime, status, b, c.status, c.code)
		}
	}
	if status, _ := postFile(t, srv, "ok.png", "image/png", make([]byte, 1000), testToken); status != 200 {
		t.Fatalf("a file at the limit: %d", status)
	}

	user := func(att map[string]any) []map[string]any {
		return []map[string]any{{"role": "user", "content": "x", "attachments": []map[string]any{att}}}
	}
	for _, c := range []struct {
		msgs       []map[string]any
		code, says string
	}{
		{user(map[string]any{"id": "0123456789abcdef", "name": "old.png"}), CodeAttachmentGone, "messages[0].attachments[0] (old.png) is no longer held by the server: attach it again"},
		{user(map[string]any{"name": "a.png", "mime": "image/png"}), CodeInvalidParams, "needs an id"},
		{user(map[string]any{"name": "a.svg", "mime": "text/html", "data": "PGI+"}), CodeInvalidParams, `"text/html" is not an image or audio type`},
		{user(map[string]any{"name": "a.png", "mime": "image/png", "data": "@@"}), CodeInvalidParams, "params"},
		{[]map[string]any{{"role": "assistant", "content": "x", "attachments": []map[string]any{{"name": "a.png", "mime": "image/png", "data": "eA=="}}}},
			CodeInvalidParams, "only a user turn has attachments"},
	} {
		r := rpc(t, srv, "chat", map[string]any{"model": "tiny", "messages": c.msgs})
		if r.Error == nil || r.Error.Code != c.code || !strings.Contains(r.Error.Message, c.says) {
			t.Errorf("%v: %+v, want %s saying %q", c.msgs, r.Error, c.code, c.says)
		}
	}
	if r := rpc(t, srv, "models.list", nil); r.Error != nil {
		t.Fatalf("the listener stopped serving: %+v", r.Error)
	}
}

// TestUploadsDropTheLeastRecentlyUsed: past MaxUploads the file used longest ago goes; a chat
// naming a file counts as a use.
func TestUploadsDropTheLeastRecentlyUsed(t *testing.T) {
	_, srv, h := startFake(t, Config{MaxUploads: 100})
	first := uploadID(t, srv, "1.png", "image/png", make([]byte, 40))
	second := uploadID(t, srv, "2.png", "image/png", make([]byte, 40))
	chat := func(id string) *RPCError {
		return rpc(t, srv, "chat", map[string]any{"model": "tiny", "messages": []map[string]any{
			{"role": "user", "content": "x", "attachments": []map[string]any{{"id": id}}}}}).Error
	}
	if err := chat(first); err != nil { // 1 is now the most recently used
		t.Fatal(err)
	}
	uploadID(t, srv, "3.png", "image/png", make([]byte, 40))
	if err := chat(second); err == nil || err.Code != CodeAttachmentGone {
		t.Fatalf("the least recently used file stayed: %+v", err)
	}
	if err := chat(first); err != nil {
		t.Fatalf("a recently used file went: %+v", err)
	}
	if h.uploads.total != 80 || len(h.uploads.files) != 2 {
		t.Fatalf("held %d bytes in %d files", h.uploads.total, len(h.uploads.files))
	}
}

// TestModelsListSaysWhatModelsTake: the model list carries vision and audio.
func TestModelsListSaysWhatModelsTake(t *testing.T) {
	f, srv, _ := startFake(t, Config{})
	f.mu.Lock()
	f.models["llava"] = "loaded"
	f.sees = map[string]Model{"llava": {Vision: true}}
	f.mu.Unlock()
	r := rpc(t, srv, "models.list", nil)
	var got []map[string]any
	if err := json.Unmarshal(r.Result.(json.RawMessage), &got); r.Error != nil || err != nil || len(got) != 2 {
		t.Fatalf("models.list: %+v %s", r.Error, r.Result)
	}
	for i, want := range []map[string]any{{"id": "llava", "vision": true, "audio": false}, {"id": "tiny", "vision": false, "audio": false}} {
		for k, v := range want {
			if got[i][k] != v {
				t.Errorf("model %d: %s = %v, want %v", i, k, got[i][k], v)
			}
		}
	}
}
