package forward

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
)

// Multipart bodies (the audio routes' file, model and other fields): the served model's name
// goes into the model field, as into a JSON body's, so an engine that checks the name (vLLM)
// accepts a transcription named by the lane's model.

// formBoundary is the boundary of a multipart/form-data content type.
func formBoundary(contentType string) (string, bool) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return "", false
	}
	return params["boundary"], true
}

// formWithModel is the multipart body with its model field's value set to model, every other
// part copied byte for byte under the same boundary (the Content-Type sent stays right). A
// body that does not parse, or has no model field, is returned as is: the upstream judges it.
func formWithModel(body []byte, boundary, model string) []byte {
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	var out bytes.Buffer
	w := multipart.NewWriter(&out)
	if w.SetBoundary(boundary) != nil {
		return body
	}
	named := false
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return body
		}
		pw, err := w.CreatePart(p.Header)
		if err != nil {
			return body
		}
		if p.FormName() == "model" && p.FileName() == "" {
			named = true
			_, err = io.WriteString(pw, model)
		} else {
			_, err = io.Copy(pw, p)
		}
		if err != nil {
			return body
		}
	}
	if !named || w.Close() != nil {
		return body
	}
	return out.Bytes()
}
