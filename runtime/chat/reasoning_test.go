package chat

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// Marker pairs of the families that think.
const (
	thinkOpen, thinkClose       = "<think>", "</think>"                    // DeepSeek-R1, QwQ, Qwen3
	mistralOpen, mistralClose   = "[THINK]", "[/THINK]"                    // Magistral
	commandROpen, commandRClose = "<|START_THINKING|>", "<|END_THINKING|>" // Command R7B
	qwenToolCallAfterThinking   = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>"
	deepSeekReasoning           = "Okay, the user is asking what 2 + 2 is. That's basic addition.\n\nTwo plus two equals four."
	deepSeekAnswer              = "2 + 2 = **4**."
	magistralReasoning          = "The user wants the capital of France. That is Paris."
)

type reasoningCase struct {
	name        string
	open, close string
	startInside bool
	in          string
	reasoning   string
	content     string
}

var reasoningCases = []reasoningCase{
	{"DeepSeek-R1, prompt opened the reasoning", thinkOpen, thinkClose, true,
		deepSeekReasoning + "\n</think>\n\n" + deepSeekAnswer, deepSeekReasoning, deepSeekAnswer},
	{"DeepSeek-R1, older template: the model opens it", thinkOpen, thinkClose, false,
		"<think>\n" + deepSeekReasoning + "\n</think>\n\n" + deepSeekAnswer, deepSeekReasoning, deepSeekAnswer},
	{"Qwen3 thinking, then a tool call", thinkOpen, thinkClose, false,
		"<think>\nThe user wants the weather in Paris. I should call get_weather.\n</think>\n\n" + qwenToolCallAfterThinking,
		"The user wants the weather in Paris. I should call get_weather.", qwenToolCallAfterThinking},
	{"empty reasoning (Qwen3 chose not to think)", thinkOpen, thinkClose, false,
		"<think>\n\n</think>\n\nHello! How can I help you today?", "", "Hello! How can I help you today?"},
	{"empty reasoning, prompt opened it", thinkOpen, thinkClose, true,
		"\n\n</think>\n\nHello", "", "Hello"},
	{"no reasoning", thinkOpen, thinkClose, false, "Hello! How can I help?", "", "Hello! How can I help?"},
	{"no reasoning, leading whitespace kept", thinkOpen, thinkClose, false, "\n  Hello", "", "\n  Hello"},
	{"whitespace only", thinkOpen, thinkClose, false, " \n", "", " \n"},
	{"empty reply", thinkOpen, thinkClose, false, "", "", ""},
	{"empty reply, prompt opened it", thinkOpen, thinkClose, true, "", "", ""},
	{"whitespace before the open marker is dropped", thinkOpen, thinkClose, false,
		"\n\n<think>x</think>y", "x", "y"},
	{"unclosed: cut by max_tokens", thinkOpen, thinkClose, false,
		"<think>\nLet me work through this carefully.\n\nFirst, ", "Let me work through this carefully.\n\nFirst,", ""},
	{"unclosed, ends in a partial close marker", thinkOpen, thinkClose, true,
		"Almost done.\n</thi", "Almost done.\n</thi", ""},
	{"open marker in the middle of content", thinkOpen, thinkClose, false,
		"Models wrap reasoning in <think> tags, like <think>this</think>.",
		"", "Models wrap reasoning in <think> tags, like <think>this</think>."},
	{"open marker only after other text", thinkOpen, thinkClose, false,
		"Sure. <think>hmm</think> done", "", "Sure. <think>hmm</think> done"},
	{"close marker without open: content (as llama.cpp)", thinkOpen, thinkClose, false,
		"I'm\nthinking</think>Hello, world!", "", "I'm\nthinking</think>Hello, world!"},
	{"close marker without open, prompt opened it", thinkOpen, thinkClose, true,
		"I'm\nthinking</think>Hello, world!", "I'm\nthinking", "Hello, world!"},
	{"prompt opened it and the model repeats the open marker", thinkOpen, thinkClose, true,
		"<think>\nHmm.\n</think>\n\nYes.", "Hmm.", "Yes."},
	{"second block stays content", thinkOpen, thinkClose, false,
		"<think>a</think>\n\n<think>b</think>c", "a", "<think>b</think>c"},
	{"inner whitespace and marker look-alikes kept", thinkOpen, thinkClose, false,
		"<think>a\n\n  b </thinking> <th c\t</think>\n\nd\n\n", "a\n\n  b </thinking> <th c", "d\n\n"},
	{"reasoning that is only a partial open marker", thinkOpen, thinkClose, true, "<thi", "<thi", ""},
	{"partial open marker at the start of a reply", thinkOpen, thinkClose, false, " <thi", "", " <thi"},
	{"multibyte text", thinkOpen, thinkClose, false, "<think>考虑一下：2+2。</think>答案是 4。", "考虑一下：2+2。", "答案是 4。"},
	{"Magistral", mistralOpen, mistralClose, false,
		"[THINK]" + magistralReasoning + "[/THINK]The capital of France is Paris.",
		magistralReasoning, "The capital of France is Paris."},
	{"Magistral, prompt opened it", mistralOpen, mistralClose, true,
		"Short.[/THINK]\nParis.", "Short.", "Paris."},
	{"Command R7B", commandROpen, commandRClose, false,
		"<|START_THINKING|>I will look up the weather.<|END_THINKING|><|START_RESPONSE|>It is sunny.<|END_RESPONSE|>",
		"I will look up the weather.", "<|START_RESPONSE|>It is sunny.<|END_RESPONSE|>"},
	{"no markers: everything is content", "", "", true, "<think>x</think>y", "", "<think>x</think>y"},
}

func TestSplitReasoning(t *testing.T) {
	for _, tt := range reasoningCases {
		t.Run(tt.name, func(t *testing.T) {
			r, c := SplitReasoning(tt.in, tt.open, tt.close, tt.startInside)
			if r != tt.reasoning || c != tt.content {
				t.Errorf("SplitReasoning = (%q, %q), want (%q, %q)", r, c, tt.reasoning, tt.content)
			}
		})
	}
}

// feedReasoning feeds pieces to a new stream and joins its outputs.
func feedReasoning(tt reasoningCase, pieces []string) (reasoning, content string) {
	s := NewReasoningStream(tt.open, tt.close, tt.startInside)
	var rb, cb strings.Builder
	for _, p := range pieces {
		r, c := s.Feed(p)
		rb.WriteString(r)
		cb.WriteString(c)
	}
	r, c := s.Close()
	rb.WriteString(r)
	cb.WriteString(c)
	return rb.String(), cb.String()
}

// TestReasoningStream feeds every case split at every position, one byte
// at a time and in pieces of three; joined, the outputs must equal the
// whole reply's split.
func TestReasoningStream(t *testing.T) {
	for _, tt := range reasoningCases {
		t.Run(tt.name, func(t *testing.T) {
			var splits [][]string
			for i := 0; i <= len(tt.in); i++ {
				splits = append(splits, []string{tt.in[:i], tt.in[i:]})
			}
			bytes, threes := []string{}, []string{}
			for i := 0; i < len(tt.in); i++ {
				bytes = append(bytes, tt.in[i:i+1])
				if i%3 == 0 {
					threes = append(threes, tt.in[i:min(i+3, len(tt.in))])
				}
			}
			splits = append(splits, bytes, threes)
			for _, pieces := range splits {
				r, c := feedReasoning(tt, pieces)
				if r != tt.reasoning || c != tt.content {
					t.Errorf("pieces %q: (%q, %q), want (%q, %q)", pieces, r, c, tt.reasoning, tt.content)
				}
			}
		})
	}
}

// TestReasoningStreamCadence checks that text goes out with the piece that
// brings it, unless it may be part of a marker or whitespace the split
// trims.
func TestReasoningStreamCadence(t *testing.T) {
	type step struct{ piece, reasoning, content string }
	tests := []struct {
		name        string
		startInside bool
		steps       []step
	}{
		{"DeepSeek-R1 reply", true, []step{
			{"\n", "", ""},           // whitespace after the open marker: dropped
			{"Okay", "Okay", ""},     // reasoning flows
			{", so", ", so", ""},     //
			{" 2+2", " 2+2", ""},     //
			{".\n\n", ".", ""},       // trailing whitespace waits for what follows
			{"Four", "\n\nFour", ""}, // ... and goes out with it
			{".\n", ".", ""},         //
			{"</", "", ""},           // may be the close marker
			{"think>", "", ""},       // it was: the held newline is dropped
			{"\n\n", "", ""},         // whitespace after the close marker: dropped
			{"The", "", "The"},       // content flows
			{" answer\n", "", " answer\n"},
			{"<think>", "", "<think>"}, // a marker in content is content
		}},
		{"Qwen3 reply", false, []step{
			{"<", "", ""},
			{"think", "", ""},
			{">\n", "", ""},
			{"Hmm", "Hmm", ""},
			{" </th", "", ""},
			{"ought>", " </thought>", ""}, // not the close marker after all
			{"</think>", "", ""},
			{"\n\nHi", "", "Hi"},
		}},
		{"no reasoning", false, []step{
			{"  ", "", ""},        // may precede an open marker
			{"<th", "", ""},       // may be the open marker
			{"is", "", "  <this"}, // was not: all of it is content
			{" is", "", " is"},    // and content flows from now on
			{" <think>", "", " <think>"},
		}},
		{"markdown reply", false, []step{
			{"<b>", "", "<b>"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewReasoningStream(thinkOpen, thinkClose, tt.startInside)
			for _, st := range tt.steps {
				r, c := s.Feed(st.piece)
				if r != st.reasoning || c != st.content {
					t.Errorf("Feed(%q) = (%q, %q), want (%q, %q)", st.piece, r, c, st.reasoning, st.content)
				}
			}
		})
	}
}

func TestPromptOpensReasoning(t *testing.T) {
	tests := []struct {
		name        string
		prompt      string
		open, close string
		want        bool
	}{
		{"DeepSeek-R1 generation prompt", "<｜User｜>2+2?<｜Assistant｜><think>\n", thinkOpen, thinkClose, true},
		{"QwQ generation prompt", "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n", thinkOpen, thinkClose, true},
		{"Qwen3 thinking: the model opens it", "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n", thinkOpen, thinkClose, false},
		{"Qwen3 enable_thinking=false", "<|im_start|>assistant\n<think>\n\n</think>\n\n", thinkOpen, thinkClose, false},
		{"history has a closed block", "<think>\nx\n</think>\n\nA<|im_end|>\n<|im_start|>assistant\n", thinkOpen, thinkClose, false},
		{"user quotes the open marker", "<|im_start|>user\nWhat is <think>?<|im_end|>\n<|im_start|>assistant\n", thinkOpen, thinkClose, false},
		{"Magistral", "[INST]Hi[/INST][THINK]", mistralOpen, mistralClose, true},
		{"Command R7B", "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|>", commandROpen, commandRClose, true},
		{"no markers", "<think>\n", "", "", false},
		{"empty prompt", "", thinkOpen, thinkClose, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PromptOpensReasoning(tt.prompt, tt.open, tt.close); got != tt.want {
				t.Errorf("PromptOpensReasoning = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReasoningStreamRandom compares the stream with SplitReasoning on
// replies made of marker fragments, whitespace and text, cut at random.
func TestReasoningStreamRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	parts := []string{thinkOpen, thinkClose, "<", "</", "<th", "</thi", "think>", " ", "\n", "\n\n", "a", "é", "b c"}
	for i := 0; i < 5000; i++ {
		var in strings.Builder
		for n := rng.IntN(8); n > 0; n-- {
			in.WriteString(parts[rng.IntN(len(parts))])
		}
		tt := reasoningCase{open: thinkOpen, close: thinkClose, startInside: rng.IntN(2) == 0, in: in.String()}
		tt.reasoning, tt.content = SplitReasoning(tt.in, tt.open, tt.close, tt.startInside)
		var pieces []string
		for rest := tt.in; rest != ""; {
			n := min(1+rng.IntN(4), len(rest))
			pieces, rest = append(pieces, rest[:n]), rest[n:]
		}
		if r, c := feedReasoning(tt, pieces); r != tt.reasoning || c != tt.content {
			t.Fatalf("startInside %v, pieces %q: (%q, %q), want (%q, %q)", tt.startInside, pieces, r, c, tt.reasoning, tt.content)
		}
	}
}
