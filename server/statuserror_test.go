package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/anthropic"
	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/ollama"
	"github.com/superfluid/superfluid/server/openai"
)

// TestStatusErrorInEveryDialect: an llm.StatusError (team mode's spec errors) keeps its status
// and Retry-After in every dialect, and its code where the shape has one (OpenAI's).
func TestStatusErrorInEveryDialect(t *testing.T) {
	err := &llm.StatusError{Status: http.StatusServiceUnavailable, Code: "model_switching", Message: "the lane is switching models",
		RetryAfter: 1500 * time.Millisecond}
	for _, d := range []dialect.Dialect{openai.Dialect, anthropic.Dialect, ollama.Dialect} {
		t.Run(d.Name, func(t *testing.T) {
			w := httptest.NewRecorder()
			c, _ := gin.CreateTestContext(w)
			c.Request = httptest.NewRequest("POST", "/", nil)
			d.WriteError(c, err)
			if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "2" {
				t.Fatalf("status %d, Retry-After %q: %s", w.Code, w.Header().Get("Retry-After"), w.Body)
			}
			var body struct {
				Error any `json:"error"`
			}
			if json.Unmarshal(w.Body.Bytes(), &body) != nil || body.Error == nil {
				t.Fatalf("no error in %s", w.Body)
			}
			if d.Name == "openai" {
				if e, _ := body.Error.(map[string]any); e["code"] != "model_switching" || e["type"] != "server_error" {
					t.Fatalf("openai error %v", e)
				}
			}
		})
	}
}
