package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/core"
)

// Reading stored responses: GET and DELETE /v1/responses/{id}, GET .../input_items.

// responseNotFound is the 404 for an unknown response id in a path.
func responseNotFound(id string) error {
	return &Error{Status: http.StatusNotFound, Type: "invalid_request_error",
		Message: fmt.Sprintf("Response with id '%s' not found. Only responses created with store=true are kept.", id)}
}

func (h *handlers) getResponse(c *gin.Context) error {
	if s := c.Query("stream"); s != "" && s != "false" {
		return unsupported("stream", "replaying a response as a stream is not supported; GET it without stream")
	}
	id := c.Param("id")
	r, err := h.svc.Response(c.Request.Context(), id)
	if errors.Is(err, core.ErrNotFound) {
		return responseNotFound(id)
	}
	if err != nil {
		return err
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", r.Body)
	return nil
}

func (h *handlers) deleteResponse(c *gin.Context) error {
	id := c.Param("id")
	err := h.svc.DeleteResponse(c.Request.Context(), id)
	if errors.Is(err, core.ErrNotFound) {
		return responseNotFound(id)
	}
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "object": "response", "deleted": true})
	return nil
}

// listInputItems pages through a response's own input items: order desc (OpenAI's default)
// or asc, limit 1-100 (default 20), after an item id.
func (h *handlers) listInputItems(c *gin.Context) error {
	order := c.DefaultQuery("order", "desc")
	if order != "asc" && order != "desc" {
		return invalid("order", fmt.Sprintf("order is %q; use asc or desc", order))
	}
	limit := 20
	if s := c.Query("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return invalid("limit", fmt.Sprintf("limit must be an integer between 1 and 100, got %q", s))
		}
		limit = n
	}
	id := c.Param("id")
	r, err := h.svc.Response(c.Request.Context(), id)
	if errors.Is(err, core.ErrNotFound) {
		return responseNotFound(id)
	}
	if err != nil {
		return err
	}
	items := []item{}
	if err := json.Unmarshal(r.Input, &items); err != nil {
		return fmt.Errorf("read stored response %s: %w", id, err)
	}
	if order == "desc" {
		slices.Reverse(items)
	}
	if after := c.Query("after"); after != "" {
		i := slices.IndexFunc(items, func(it item) bool { return it.ID == after })
		if i < 0 {
			return invalid("after", fmt.Sprintf("response '%s' has no input item with id '%s'", id, after))
		}
		items = items[i+1:]
	}
	list := itemList{Object: "list", Data: items[:min(limit, len(items))], HasMore: len(items) > limit}
	if n := len(list.Data); n > 0 {
		list.FirstID, list.LastID = &list.Data[0].ID, &list.Data[n-1].ID
	}
	c.JSON(http.StatusOK, list)
	return nil
}
