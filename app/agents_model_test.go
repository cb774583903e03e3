package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// The model the agents' free turns run on: a Qwen chat template (tools in the system turn, calls
// as <tool_call> blocks), a 64k window, and weights that end every reply at once.
const (
	agentWindow = 64 * 1024
	agentEmbd   = 32
	// Qwen 2.5 for the free turns; Qwen 3 (the same tool syntax, and <think> reasoning) for the
	// scripted loops, whose replies think first so the agents' thinking blocks round-trip too.
	qwen25Template = "../runtime/chat/testdata/templates/qwen2.5.jinja"
	qwen3Template  = "../runtime/chat/testdata/templates/qwen3.jinja"
	agentVocabFile = "../../shared/models/ggml-vocab-llama-spm.gguf"
)

// writeEOTModel writes a llama model whose every reply is empty: every token embeds to the same
// vector, the one layer adds nothing (its output projections are zero), and only <|im_end|>,
// the end-of-turn token, has a non-zero output row, so its logit leads every other by
// agentEmbd and greedy and sampled decoding both pick it first. A random-weight model never
// ends a reply, and both agents treat a reply cut at their cap as an error.
//
// The tokenizer is the Llama-2 SPM vocabulary from ../shared/models when present, else the tiny
// one gguftest.WriteTinyLlama writes; ChatML's two markers are added to it as control tokens.
func writeEOTModel(t *testing.T, path, template string) {
	t.Helper()
	tmpl, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	vocabPath := agentVocabFile
	if _, err := os.Stat(vocabPath); err != nil {
		vocabPath = filepath.Join(t.TempDir(), "tiny-vocab.gguf")
		if err := gguftest.WriteTinyLlama(vocabPath, gguftest.TinyLlamaOptions{Vocab: 2048, Layers: 1}); err != nil {
			t.Fatal(err)
		}
	}
	src, err := gguf.ReadFile(vocabPath)
	if err != nil {
		t.Fatal(err)
	}
	tokens, ok1 := src.Strings("tokenizer.ggml.tokens")
	scoresV, ok2 := src.Value("tokenizer.ggml.scores")
	typesV, ok3 := src.Value("tokenizer.ggml.token_type")
	scores64, ok4 := scoresV.Floats()
	types64, ok5 := typesV.Ints()
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || len(scores64) != len(tokens) || len(types64) != len(tokens) {
		t.Fatalf("%s: no SPM vocabulary (tokens, scores, token types)", vocabPath)
	}
	scores := make([]float32, len(tokens))
	types := make([]int32, len(tokens))
	for i := range tokens {
		scores[i], types[i] = float32(scores64[i]), int32(types64[i])
	}
	const control = 3        // LLAMA_TOKEN_TYPE_CONTROL
	imEnd := len(tokens) + 1 // after <|im_start|>
	tokens = append(tokens, "<|im_start|>", "<|im_end|>")
	scores = append(scores, 0, 0)
	types = append(types, control, control)
	vocab := uint64(len(tokens))

	w := gguftest.NewWriter()
	w.AddString("general.architecture", "llama")
	w.AddString("general.name", "agents-eot")
	w.AddUint32("general.file_type", 0) // F32
	w.AddUint32("llama.context_length", agentWindow)
	w.AddUint32("llama.embedding_length", agentEmbd)
	w.AddUint32("llama.block_count", 1)
	w.AddUint32("llama.feed_forward_length", agentEmbd)
	w.AddUint32("llama.attention.head_count", 2)
	w.AddUint32("llama.attention.head_count_kv", 2)
	w.AddUint32("llama.rope.dimension_count", agentEmbd/2)
	w.AddFloat32("llama.rope.freq_base", 10000)
	w.AddFloat32("llama.attention.layer_norm_rms_epsilon", 1e-5)
	w.AddString("tokenizer.ggml.model", "llama")
	w.AddStrings("tokenizer.ggml.tokens", tokens)
	w.AddFloat32s("tokenizer.ggml.scores", scores)
	w.AddInt32s("tokenizer.ggml.token_type", types)
	w.AddUint32("tokenizer.ggml.unknown_token_id", 0)
	w.AddUint32("tokenizer.ggml.bos_token_id", 1)
	w.AddUint32("tokenizer.ggml.eos_token_id", uint32(imEnd))
	w.AddUint32("tokenizer.ggml.eot_token_id", uint32(imEnd))
	w.AddBool("tokenizer.ggml.add_bos_token", false) // ChatML starts with <|im_start|>, not BOS
	w.AddBool("tokenizer.ggml.add_eos_token", false)
	w.AddString("tokenizer.chat_template", string(tmpl))

	filled := func(n uint64, v float32) []float32 {
		d := make([]float32, n)
		for i := range d {
			d[i] = v
		}
		return d
	}
	e := uint64(agentEmbd)
	w.AddTensorF32("token_embd.weight", []uint64{e, vocab}, filled(e*vocab, 1))
	w.AddTensorF32("blk.0.attn_norm.weight", []uint64{e}, filled(e, 1))
	for _, name := range []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"} {
		w.AddTensorF32("blk.0."+name+".weight", []uint64{e, e}, filled(e*e, 0))
	}
	w.AddTensorF32("blk.0.ffn_norm.weight", []uint64{e}, filled(e, 1))
	w.AddTensorF32("output_norm.weight", []uint64{e}, filled(e, 1))
	out := filled(e*vocab, 0)
	for i := range e { // row imEnd of the [vocab][embd] output matrix
		out[uint64(imEnd)*e+i] = 1
	}
	w.AddTensorF32("output.weight", []uint64{e, vocab}, out)
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// TestEOTModelEndsEveryReply: the agents' model, on a real worker, ends its reply at once,
// greedy or sampled, with or without tools, and renders the tools into a prompt within its
// 64k window (the free turns rely on all of it; a reply cut at the cap fails the agents).
func TestEOTModelEndsEveryReply(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agents-eot.gguf")
	writeEOTModel(t, path, qwen25Template)
	cfg := testConfig(t, path)
	cfg.ContextLength = agentWindow
	_, srv := startServer(t, cfg, true)
	client := sdk(srv.URL)
	for _, tt := range []struct {
		name  string
		edit  func(*openai.ChatCompletionNewParams)
		tools bool
	}{
		{"greedy", func(p *openai.ChatCompletionNewParams) { p.Temperature = openai.Float(0) }, false},
		{"sampled", func(p *openai.ChatCompletionNewParams) { p.Temperature, p.Seed = openai.Float(2), openai.Int(3) }, false},
		{"tools", func(p *openai.ChatCompletionNewParams) { p.Tools = []openai.ChatCompletionToolUnionParam{cityTool} }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			params := openai.ChatCompletionNewParams{
				Model: "agents-eot", MaxTokens: openai.Int(20),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hi")},
			}
			tt.edit(&params)
			res, err := client.Chat.Completions.New(t.Context(), params)
			if err != nil {
				t.Fatal(err)
			}
			c := res.Choices[0]
			if c.FinishReason != "stop" || c.Message.Content != "" || len(c.Message.ToolCalls) != 0 || res.Usage.CompletionTokens > 1 {
				t.Errorf("finish %q, content %q, %d calls, %d completion tokens; want an empty reply ended at once",
					c.FinishReason, c.Message.Content, len(c.Message.ToolCalls), res.Usage.CompletionTokens)
			}
			// Qwen 2.5's default system turn is ~20 tokens; with a tool its instructions and schema
			// come to more than 100.
			if min := map[bool]int64{false: 10, true: 100}[tt.tools]; res.Usage.PromptTokens < min {
				t.Errorf("prompt of %d tokens, want at least %d", res.Usage.PromptTokens, min)
			}
		})
	}
}
