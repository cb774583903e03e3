package gguf

// FIM holds a model's fill-in-the-middle tokens: prefix, suffix and middle markers.
type FIM struct {
	Prefix, Suffix, Middle int
}

// fimTokenTexts are the marker spellings of known FIM-trained vocabularies (CodeLlama, StarCoder,
// Qwen2.5-Coder, DeepSeek-Coder, ...), used when the file has no explicit FIM keys.
var fimTokenTexts = [3][]string{
	{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>"},
	{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>"},
	{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>"},
}

// FIMTokens finds the model's FIM markers: from tokenizer.ggml.fim_{pre,suf,mid}_token_id (or the
// older prefix/suffix/middle keys), else by the markers' text in the vocabulary. ok is false
// when the model has no complete set.
func (f *File) FIMTokens() (FIM, bool) {
	keys := [3][2]string{{"fim_pre", "prefix"}, {"fim_suf", "suffix"}, {"fim_mid", "middle"}}
	var ids [3]int
	found := 0
	for i, names := range keys {
		for _, name := range names {
			if id, ok := f.SpecialToken(name); ok {
				ids[i] = id
				found++
				break
			}
		}
	}
	if found == 3 {
		return FIM{ids[0], ids[1], ids[2]}, true
	}
	tokens, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok {
		return FIM{}, false
	}
	index := make(map[string]int, 18)
	for _, texts := range fimTokenTexts {
		for _, t := range texts {
			index[t] = -1
		}
	}
	for id, text := range tokens {
		if v, want := index[text]; want && v < 0 {
			index[text] = id
		}
	}
	for i, texts := range fimTokenTexts {
		ids[i] = -1
		for _, t := range texts {
			if id := index[t]; id >= 0 {
				ids[i] = id
				break
			}
		}
		if ids[i] < 0 {
			return FIM{}, false
		}
	}
	return FIM{ids[0], ids[1], ids[2]}, true
}
