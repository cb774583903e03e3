package llamacpp

import (
	"path/filepath"
	"testing"
)

// needStories skips a test whose checks rely on stories260K's trained text (its repetitions,
// token counts, the 32k-vocabulary model beside it) when ../shared/models is absent and the
// tests run on a written random-weight model.
func needStories(t *testing.T) {
	t.Helper()
	if filepath.Base(testModelPath) != "stories260K.gguf" {
		t.Skip("needs ../shared/models (stories260K and llama-2-tiny-random): the written random-weight model does not repeat itself as this test needs")
	}
}
