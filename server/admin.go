package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/reqbody"
)

// adminOnly is an admin route: it refuses a caller who may not use the admin routes (403
// admin_required), runs fn, and renders fn's error, mapped by mapErr, in the shape of the
// path's dialect. Keys, people, lanes and bookings' admin routes share it.
func adminOnly(mapErr func(error) error, fn func(*gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		err := func() error {
			if ok, refusal := auth.Admin(c.Request); !ok {
				return &dialect.Refusal{Status: http.StatusForbidden, Code: "admin_required", Message: refusal}
			}
			return fn(c)
		}()
		if err != nil {
			writeError(c, mapErr(err))
		}
	}
}

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
