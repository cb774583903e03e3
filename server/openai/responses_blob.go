package openai

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Reasoning blobs. With include ["reasoning.encrypted_content"] each reasoning item carries
// encrypted_content, the server's own opaque encoding of the reasoning text, so a client that
// keeps nothing on the server (store: false, as the Codex CLI runs) sends the item back and
// the model sees its reasoning again.
//
// Decision: the blob is versioned JSON in base64url with a SHA-256 integrity tag; it is not
// encrypted nor keyed. This server serves the reasoning in plain text anyway (the item's
// content), and a client may send reasoning_text content back in any reasoning item, so a
// secret key would keep out nothing a client cannot already send. The tag turns a blob that
// was cut, edited or made elsewhere (OpenAI's, from a conversation that switched servers)
// into a clear 400 instead of garbage in the prompt, and a blob stays readable after a
// restart or by another superfluid, with no key to keep or lose.

const (
	blobPrefix  = "sfr1."
	blobVersion = 1
	blobTagLen  = 16
)

// blobPayload is what a blob holds.
type blobPayload struct {
	V         int    `json:"v"`
	Reasoning string `json:"reasoning"`
}

func blobTag(payload []byte) []byte {
	h := sha256.New()
	h.Write([]byte("superfluid reasoning blob\x00"))
	h.Write(payload)
	return h.Sum(nil)[:blobTagLen]
}

// sealReasoning is the blob for a reasoning text.
func sealReasoning(text string) string {
	payload, _ := json.Marshal(blobPayload{V: blobVersion, Reasoning: text})
	enc := base64.RawURLEncoding
	return blobPrefix + enc.EncodeToString(payload) + "." + enc.EncodeToString(blobTag(payload))
}

// openReasoning reads a blob back; param names it in the 400 when it cannot.
func openReasoning(param, blob string) (string, error) {
	if !strings.HasPrefix(blob, blobPrefix) {
		return "", invalid(param, fmt.Sprintf("%s was not made by this server: it reads only the reasoning blobs it wrote (they start with %q). "+
			"Send the reasoning item without encrypted_content, or leave the item out", param, blobPrefix))
	}
	damaged := invalid(param, fmt.Sprintf("%s is damaged or was edited (its integrity check fails); send it back exactly as the response gave it, or leave the reasoning item out", param))
	body, tag, ok := strings.Cut(strings.TrimPrefix(blob, blobPrefix), ".")
	if !ok {
		return "", damaged
	}
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(body)
	got, err2 := enc.DecodeString(tag)
	if err1 != nil || err2 != nil || subtle.ConstantTimeCompare(got, blobTag(payload)) != 1 {
		return "", damaged
	}
	var p blobPayload
	if err := json.Unmarshal(payload, &p); err != nil || p.V != blobVersion {
		return "", invalid(param, fmt.Sprintf("%s is a reasoning blob of a version this server does not read; leave the reasoning item out", param))
	}
	return p.Reasoning, nil
}
