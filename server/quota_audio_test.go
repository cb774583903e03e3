package server

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestQuotaHoldsTranscriptions: in team mode a transcription or translation runs on a model
// (one generation per 30 s of audio), so it is held to its person's token quota like a chat:
// once alice's daily tokens are spent, /v1/audio/transcriptions and /v1/audio/translations are
// 429 quota_exceeded before anything is decoded, as they were when team mode forwarded them.
func TestQuotaHoldsTranscriptions(t *testing.T) {
	qt := newQuotaTeam(t, quota.Policy{DailyTokens: 30}, 0)
	if resp, v := qt.chat(t, "alice", 60); resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's chat: %d %v", resp.StatusCode, v)
	}
	qt.quotas.Settled()
	for _, path := range []string{"/v1/audio/transcriptions", "/v1/audio/translations"} {
		var body bytes.Buffer
		w := multipart.NewWriter(&body)
		_ = w.WriteField("model", "fake")
		fw, _ := w.CreateFormFile("file", "clip.wav")
		_, _ = fw.Write(servertest.WAV(0.5, 440))
		_ = w.Close()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", qt.url+path, &body)
		req.Header.Set("Content-Type", w.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+qt.keys["alice2"])
		resp, b := servertest.Send(t, req)
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		if code, _ := errorOf(v); resp.StatusCode != http.StatusTooManyRequests || code != "quota_exceeded" {
			t.Errorf("%s with alice's tokens spent: %d %s, want 429 quota_exceeded", path, resp.StatusCode, b)
		}
	}
}
