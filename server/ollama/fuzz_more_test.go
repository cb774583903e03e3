package ollama_test

import "testing"

// FuzzEmbed fuzzes POST /api/embed bodies (the fake model generates: a valid body ends in
// Ollama's capability 400 after the decoder, which is what is fuzzed).
func FuzzEmbed(f *testing.F) {
	fuzzRoute(f, "/api/embed", []string{
		`{"model":"fake","input":"hello"}`,
		`{"model":"fake","input":["a","b"],"truncate":false,"dimensions":4,"keep_alive":"1m","options":{"num_ctx":64}}`,
		`{"model":"fake","input":[]}`, `{"model":"fake"}`, `{"model":"fake","input":7}`, `{`,
	})
}

// FuzzEmbeddings fuzzes POST /api/embeddings bodies (the older, one-prompt route).
func FuzzEmbeddings(f *testing.F) {
	fuzzRoute(f, "/api/embeddings", []string{
		`{"model":"fake","prompt":"hello"}`,
		`{"model":"fake","prompt":"","keep_alive":0,"options":{"temperature":1}}`,
		`{"model":"fake","prompt":["a"]}`, `{"prompt":"x"}`, `{`,
	})
}
