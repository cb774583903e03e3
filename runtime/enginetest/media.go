package enginetest

import (
	"context"
	"fmt"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
)

// MediaTokens is how many prompt positions the fake gives each image or audio clip, as a real
// projector turns one into a run of embeddings: prompt_tokens counts them.
const MediaTokens = 16

// SetProjector makes the fake report a multimodal projector at path in Info, encoding images
// (vision) and audio as said: the core then prefers these facts to the model's.
func (e *Engine) SetProjector(path string, vision, audio bool) {
	e.info.Projector, e.info.Vision, e.info.Audio = path, vision, audio
}

// LastRequest is the last request Generate saw (its Media, MediaMarker and Adapters as the
// core sent them); ok is false before any.
func (e *Engine) LastRequest() (req llm.Request, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.requests) == 0 {
		return llm.Request{}, false
	}
	return e.requests[len(e.requests)-1], true
}

// mediaPrompt tokenizes a prompt with media as the real engine does: the text pieces between
// markers (special tokens on the first only), each marker a run of MediaTokens positions
// (token id 0, which no byte maps to). It refuses what the real engine refuses: token ids
// with media, and a marker count other than len(Media).
func (e *Engine) mediaPrompt(ctx context.Context, req *llm.Request) ([]int, error) {
	switch {
	case len(req.Tokens) > 0:
		return nil, fmt.Errorf("%w: a request with media must send a prompt, not token ids", llm.ErrInvalidInput)
	case req.MediaMarker == "":
		return nil, fmt.Errorf("%w: a request with media needs its media marker", llm.ErrInvalidInput)
	}
	pieces := strings.Split(req.Prompt, req.MediaMarker)
	if len(pieces)-1 != len(req.Media) {
		return nil, fmt.Errorf("%w: the prompt holds %d media markers for %d media", llm.ErrInvalidInput, len(pieces)-1, len(req.Media))
	}
	var tokens []int
	for i, piece := range pieces {
		if i > 0 {
			tokens = append(tokens, make([]int, MediaTokens)...)
		}
		t, _ := e.Tokenize(ctx, piece, req.AddSpecial && i == 0, true)
		tokens = append(tokens, t...)
	}
	return tokens, nil
}
