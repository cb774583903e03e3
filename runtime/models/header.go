package models

import "github.com/superfluid/superfluid/runtime/gguf"

// HeaderFacts are the facts of a model read from its GGUF header alone (the first bytes of a
// file not yet downloaded, for the Discover tab's fit): what Estimate needs but the weights,
// which the caller takes from the file's size.
func HeaderFacts(f *gguf.File) Facts {
	return Facts{Architecture: f.Architecture(), ContextLength: f.ContextLength(),
		KVBytesPerToken: kvBytesPerToken(f)}
}
