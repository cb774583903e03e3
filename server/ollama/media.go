package ollama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// imageParts reads a message's images (Ollama's: base64 strings of the image files; a data URL
// is taken too) as media parts placed before the message's text, as Ollama places them. path
// names the field in errors ("messages[0].images"). The core checks that the model sees images
// and decodes them.
func imageParts(path string, images []json.RawMessage) ([]llm.MediaPart, error) {
	if len(images) == 0 {
		return nil, nil
	}
	out := make([]llm.MediaPart, 0, len(images))
	for j, raw := range images {
		where := fmt.Sprintf("%s[%d]", path, j)
		var s string
		if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '"' || json.Unmarshal(b, &s) != nil {
			return nil, badRequest("%s must be a string: the image file's bytes in base64", where)
		}
		part := llm.MediaPart{Kind: llm.MediaImage, Where: where}
		if strings.HasPrefix(strings.ToLower(s), "data:") {
			part.URL = s // the core parses the data URL
		} else {
			data, err := core.DecodeBase64(s)
			if err != nil {
				return nil, badRequest("%s is not valid base64 (%v); send the image file's bytes in base64", where, err)
			}
			if len(data) == 0 {
				return nil, badRequest("%s is empty; send the image file's bytes in base64", where)
			}
			part.Data = data
		}
		out = append(out, part)
	}
	return out, nil
}
