package openai_test

import "testing"

// FuzzEmbeddings fuzzes POST /v1/embeddings bodies (the fake model generates, so a valid body
// ends in the unsupported_model 400 after the decoder; the decoder is what is fuzzed).
func FuzzEmbeddings(f *testing.F) {
	fuzzRoute(f, config{}, "/v1/embeddings", []string{
		`{"model":"fake","input":"hello"}`,
		`{"model":"fake","input":["a","b"],"encoding_format":"base64","dimensions":8}`,
		`{"model":"fake","input":[1,2,3]}`, `{"model":"fake","input":[[1,2],[3]],"user":"u"}`,
		`{"model":"fake","input":""}`, `{"model":"fake","input":[]}`, `{"model":"fake"}`,
		`{"model":"fake","input":{"text":"x"}}`, `[]`, `{`,
	})
}

// FuzzRerank fuzzes POST /v1/rerank bodies.
func FuzzRerank(f *testing.F) {
	fuzzRoute(f, config{}, "/v1/rerank", []string{
		`{"model":"fake","query":"q","documents":["a","b"]}`,
		`{"model":"fake","query":"q","documents":["a","b","c"],"top_n":2,"return_documents":true}`,
		`{"model":"fake","query":"q","documents":[{"text":"a"}]}`,
		`{"model":"fake","query":"","documents":[]}`, `{"model":"fake","top_n":-1}`, `{`,
	})
}

// FuzzTokenize fuzzes POST /v1/tokenize and /v1/detokenize bodies (llama-server's shapes).
func FuzzTokenize(f *testing.F) {
	fuzzRoute(f, config{}, "/v1/tokenize", []string{
		`{"model":"fake","content":"hello world"}`,
		`{"model":"fake","content":"hi","add_special":true,"with_pieces":true}`,
		`{"content":"x"}`, `{"model":"fake","content":["a"]}`, `{"model":"fake","tokens":[1,2]}`, `{`,
	})
}
