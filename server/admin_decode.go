package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/reqbody"
)

// decodeStrict reads a JSON body into v, refusing unknown fields; example shows a good body.
func decodeStrict(c *gin.Context, v any, example string) error {
	data, err := reqbody.Read(c.Request)
	if err != nil {
		return &dialect.Refusal{Status: http.StatusBadRequest, Message: err.Error()}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &dialect.Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("the body is not valid here (%v); send %s", err, example)}
	}
	return nil
}
