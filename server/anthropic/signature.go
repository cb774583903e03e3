package anthropic

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"strings"
)

// signer computes a thinking block's signature: base64 of a SHA-256 digest of the text, then
// the text. Anthropic clients require the field and pass it back unchanged. With display
// "omitted" they get the block without its text, and the official API restores that turn's
// thinking from the signature when the history comes back; so does this server (unsign), so
// that the model sees its own reasoning and the prompt repeats what it generated (the prefix
// cache serves it). The digest only tells this server's signatures from others'.
type signer struct {
	h    hash.Hash
	text strings.Builder
}

const signaturePrefix = "superfluid thinking\x00"

func newSigner() *signer {
	s := &signer{h: sha256.New()}
	s.h.Write([]byte(signaturePrefix))
	return s
}

func (s *signer) add(text string) {
	s.h.Write([]byte(text))
	s.text.WriteString(text)
}

func (s *signer) signature() string {
	return base64.StdEncoding.EncodeToString(append(s.h.Sum(nil), s.text.String()...))
}

// signature is the signature of a whole thinking text.
func signature(text string) string {
	s := newSigner()
	s.add(text)
	return s.signature()
}

// unsign returns the thinking text a signature of this server carries; ok is false for any
// other signature (Anthropic's, or one altered).
func unsign(sig string) (text string, ok bool) {
	b, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(b) < sha256.Size {
		return "", false
	}
	digest, body := b[:sha256.Size], b[sha256.Size:]
	h := sha256.New()
	h.Write([]byte(signaturePrefix))
	h.Write(body)
	if !bytes.Equal(h.Sum(nil), digest) {
		return "", false
	}
	return string(body), true
}
