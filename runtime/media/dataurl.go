package media

import (
	"encoding/base64"
	"net/url"
	"strings"
)

// ParseDataURL splits a data URL (RFC 2397: "data:<mime>[;params][;base64],<data>") into its
// declared MIME type (lowercased, parameters dropped; "" when absent) and its bytes. A base64
// payload may lack padding or wrap lines; anything else in it is refused.
func ParseDataURL(s string) (mime string, data []byte, err error) {
	rest, ok := cutPrefixFold(s, "data:")
	if !ok {
		return "", nil, invalid("not a data URL (it must start with \"data:\")")
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", nil, invalid("the data URL has no comma between its type and its data")
	}
	params := strings.Split(meta, ";")
	mime = strings.ToLower(strings.TrimSpace(params[0]))
	isBase64 := false
	for _, p := range params[1:] {
		if strings.EqualFold(strings.TrimSpace(p), "base64") {
			isBase64 = true
		}
	}
	if !isBase64 {
		text, err := url.PathUnescape(payload)
		if err != nil {
			return "", nil, invalid("the data URL's data is neither base64 nor valid percent-encoding: %v", err)
		}
		return mime, []byte(text), nil
	}
	data, err = decodeBase64(payload)
	if err != nil {
		return "", nil, err
	}
	return mime, data, nil
}

// decodeBase64 decodes standard or URL-safe base64, padded or not, ignoring line breaks and
// spaces (some clients wrap long payloads).
func decodeBase64(s string) ([]byte, error) {
	if strings.ContainsAny(s, " \t\r\n") {
		s = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
				return -1
			}
			return r
		}, s)
	}
	if s == "" {
		return nil, invalid("the data URL's base64 data is empty")
	}
	enc := base64.RawStdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.RawURLEncoding
	}
	data, err := enc.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, invalid("the data URL's data is not valid base64 (%v); encode the file with standard base64", err)
	}
	return data, nil
}

// cutPrefixFold is strings.CutPrefix ignoring ASCII case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}
