package llamacpp

// Prompt lookup: the drafter without a second model. A reply that quotes, edits or
// refactors its input repeats long runs of it, so the tokens that followed the last
// occurrence of the lane's most recent n tokens are a good guess at what comes next.

// ngramMax and ngramMin bound the n-gram the drafter looks for: longer matches first (they
// predict better), down to ngramMin (shorter ones match free text by chance and mostly get
// rejected).
const (
	ngramMax = 4
	ngramMin = 2
	// ngramWindow is how far back the search looks, so its cost stays bounded on long contexts.
	ngramWindow = 8192
)

// ngramDraft appends to dst up to k tokens that followed the most recent earlier occurrence of
// the longest suffix of tokens (ngramMax tokens down to ngramMin) and returns it; dst is
// unchanged when no suffix occurs earlier.
func ngramDraft(tokens []int, k int, dst []int) []int {
	if k <= 0 {
		return dst
	}
	end := len(tokens)
	from := max(0, end-ngramWindow)
	for n := min(ngramMax, end-1); n >= ngramMin; n-- {
		suffix := tokens[end-n:]
		for start := end - n - 1; start >= from; start-- {
			if tokens[start] != suffix[0] || !equalTokens(tokens[start:start+n], suffix) {
				continue
			}
			follow := tokens[start+n : min(end, start+n+k)]
			return append(dst, follow...)
		}
	}
	return dst
}

func equalTokens(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
