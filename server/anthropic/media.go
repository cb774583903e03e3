package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// imageTypes are the media types Anthropic takes for a base64 image source.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// imagePart reads an image block's source at path (messages.0.content.1): {"type": "base64",
// "media_type", "data"} or {"type": "url", "url"}, the image going at byte at of its message's
// text. The core checks that the model sees images and decodes them.
func imagePart(path string, b block, at int) (llm.MediaPart, error) {
	var src struct {
		Type      string  `json:"type"`
		MediaType *string `json:"media_type"`
		Data      *string `json:"data"`
		URL       *string `json:"url"`
	}
	raw := bytes.TrimSpace(b.Source)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return llm.MediaPart{}, invalid("%s.source: Field required", path)
	}
	if kind(raw) != "an object" || json.Unmarshal(raw, &src) != nil {
		return llm.MediaPart{}, invalid(`%s.source: Input should be an object like {"type": "base64", "media_type": "image/png", "data": "..."}`, path)
	}
	part := llm.MediaPart{At: at, Kind: llm.MediaImage, Where: path}
	switch src.Type {
	case "base64":
		switch {
		case src.MediaType == nil:
			return part, invalid("%s.source.media_type: Field required", path)
		case !imageTypes[*src.MediaType]:
			return part, invalid("%s.source.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp', got %.40q", path, *src.MediaType)
		case src.Data == nil || *src.Data == "":
			return part, invalid("%s.source.data: Field required; send the image file's bytes in base64", path)
		}
		data, err := core.DecodeBase64(*src.Data)
		if err != nil {
			return part, invalid("%s.source.data: the image data is not valid base64 (%v)", path, err)
		}
		part.MIME, part.Data = *src.MediaType, data
	case "url":
		if src.URL == nil || *src.URL == "" {
			return part, invalid("%s.source.url: Field required", path)
		}
		url := strings.TrimSpace(*src.URL)
		if scheme, _, _ := strings.Cut(url, ":"); !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") {
			return part, invalid("%s.source.url: Input should be an http(s) URL", path)
		}
		part.URL = url
	case "file":
		return part, invalid("%s.source: file sources (the Files API) are not served by this server; send the image as a base64 source", path)
	case "":
		return part, invalid("%s.source.type: Field required; use base64 or url", path)
	default:
		return part, invalid("%s.source.type: Input should be 'base64' or 'url', got %.40q", path, src.Type)
	}
	return part, nil
}

// mergeMedia is what merge does to next's media when next's text is joined to prev's with
// chat.JoinText: each moves by where next's text begins in the joined text.
func mergeMedia(prev, next chat.Message) []llm.MediaPart {
	if len(next.Media) == 0 {
		return prev.Media
	}
	shift := len(chat.JoinText(prev.Content, next.Content)) - len(next.Content)
	out := append([]llm.MediaPart(nil), prev.Media...)
	for _, p := range next.Media {
		p.At += shift
		out = append(out, p)
	}
	return out
}
