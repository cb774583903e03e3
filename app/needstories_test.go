package app

import (
	"path/filepath"
	"testing"
)

// needStories skips a test that relies on stories260K's trained text when ../shared/models is
// absent and the tests run on a written random-weight model.
func needStories(t *testing.T) {
	t.Helper()
	if filepath.Base(testModel) != "stories260K.gguf" {
		t.Skip("needs ../shared/models/stories260K.gguf: on the written random-weight model the conversation's token counts differ from what this test asserts")
	}
}
