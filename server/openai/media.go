package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// Images and audio: chat completions take image_url and input_audio parts, the Responses API
// input_image and input_audio. Both become llm.MediaParts at their place in the message's
// text; the core checks that the model takes them and decodes them.

// audioMIME is the type of each input_audio format this server decodes.
var audioMIME = map[string]string{"wav": "audio/wav", "mp3": "audio/mpeg", "flac": "audio/flac"}

// imageURLPart reads the image URL at param of the part where: a data URL
// (data:image/png;base64,...) or an http(s) URL, which the core fetches only with
// --allow-remote-media.
func imageURLPart(where, param, url string, at int) (llm.MediaPart, error) {
	url = strings.TrimSpace(url)
	if url == "" {
		return llm.MediaPart{}, invalid(param, fmt.Sprintf("%s is missing; send a data URL (data:image/png;base64,...) or an http(s) URL", param))
	}
	scheme, _, _ := strings.Cut(url, ":")
	switch strings.ToLower(scheme) {
	case "data", "http", "https":
	default:
		return llm.MediaPart{}, invalid(param, fmt.Sprintf("%s has the scheme %.20q; send a data URL (data:image/png;base64,...) or an http(s) URL", param, scheme))
	}
	return llm.MediaPart{At: at, Kind: llm.MediaImage, URL: url, Where: where}, nil
}

// audioPart reads an input_audio part's {data, format}: base64 file bytes in wav, mp3 or flac.
func audioPart(param string, raw json.RawMessage, at int) (llm.MediaPart, error) {
	var a struct {
		Data   *string `json:"data"`
		Format *string `json:"format"`
	}
	if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &a) != nil {
		return llm.MediaPart{}, invalid(param+".input_audio", fmt.Sprintf(`%s.input_audio must be {"data": "<base64>", "format": "wav"}`, param))
	}
	if a.Format == nil {
		return llm.MediaPart{}, invalid(param+".input_audio.format", fmt.Sprintf("%s.input_audio.format is missing; use wav, mp3 or flac", param))
	}
	mime, ok := audioMIME[strings.ToLower(*a.Format)]
	if !ok {
		return llm.MediaPart{}, invalid(param+".input_audio.format", fmt.Sprintf("%s.input_audio.format is %.20q; use wav, mp3 or flac", param, *a.Format))
	}
	if a.Data == nil || *a.Data == "" {
		return llm.MediaPart{}, invalid(param+".input_audio.data", fmt.Sprintf("%s.input_audio.data is missing; send the audio file's bytes in base64", param))
	}
	data, err := core.DecodeBase64(*a.Data)
	if err != nil {
		return llm.MediaPart{}, invalid(param+".input_audio.data", fmt.Sprintf("%s.input_audio.data is not valid base64 (%v); send the audio file's bytes in base64", param, err))
	}
	return llm.MediaPart{At: at, Kind: llm.MediaAudio, MIME: mime, Data: data, Where: param}, nil
}

// chatMedia turns message i's non-text parts into media parts. Images and audio go in user
// messages only, as OpenAI takes them.
func chatMedia(i int, role string, c *content) ([]llm.MediaPart, error) {
	var out []llm.MediaPart
	for _, p := range c.Others {
		pp := fmt.Sprintf("messages[%d].content[%d]", i, p.Index)
		var part llm.MediaPart
		var err error
		switch p.Type {
		case "image_url":
			part, err = chatImage(pp, p)
		case "input_audio":
			var w struct {
				InputAudio json.RawMessage `json:"input_audio"`
			}
			_ = json.Unmarshal(p.Raw, &w) // an object: content's decoding read its type
			part, err = audioPart(pp, w.InputAudio, p.At)
		case "file", "video_url", "input_video":
			return nil, unsupportedInput(pp, fmt.Sprintf("%s is a %q part; this server takes text, image_url and input_audio parts", pp, p.Type))
		case "":
			return nil, invalid(pp+".type", fmt.Sprintf("%s.type is missing; use text, image_url or input_audio", pp))
		default:
			return nil, invalid(pp+".type", fmt.Sprintf("%s.type is %.40q; use text, image_url or input_audio", pp, p.Type))
		}
		if err != nil {
			return nil, err
		}
		if role != "user" {
			return nil, invalid(pp, fmt.Sprintf("%s is a %s part in a %s message; images and audio go in user messages", pp, p.Type, role))
		}
		out = append(out, part)
	}
	return out, nil
}

// chatImage reads an image_url part: {"image_url": {"url": ..., "detail": ...}}, or the URL as
// a plain string, as some clients send it.
func chatImage(param string, p otherPart) (llm.MediaPart, error) {
	var w struct {
		ImageURL json.RawMessage `json:"image_url"`
	}
	_ = json.Unmarshal(p.Raw, &w)
	raw := bytes.TrimSpace(w.ImageURL)
	var url string
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
		return llm.MediaPart{}, invalid(param+".image_url", fmt.Sprintf(`%s has no image_url; send {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}`, param))
	case raw[0] == '"':
		if json.Unmarshal(raw, &url) != nil {
			return llm.MediaPart{}, invalid(param+".image_url", param+".image_url is not a valid JSON string")
		}
	default:
		var obj struct {
			URL *string `json:"url"`
		}
		if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
			return llm.MediaPart{}, invalid(param+".image_url", fmt.Sprintf(`%s.image_url must be {"url": "..."}`, param))
		}
		if obj.URL != nil {
			url = *obj.URL
		}
	}
	return imageURLPart(param, param+".image_url.url", url, p.At)
}
