package openai

import (
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/batches"
)

// Files: POST /v1/files (multipart file and purpose), GET /v1/files, GET /v1/files/{id},
// GET /v1/files/{id}/content and DELETE /v1/files/{id}, in OpenAI's shapes. The upload
// streams to disk through server/batches; it is never held whole in memory.

func (h *handlers) routesFiles(r gin.IRouter) {
	r.POST("/v1/files", Handle(h.uploadFile))
	r.GET("/v1/files", Handle(h.listFiles))
	// A wildcard, so that every id (one with "/" or ".." included) reaches the handler and
	// gets the same 404 as any unknown id.
	r.GET("/v1/files/*path", Handle(h.getFile))
	r.DELETE("/v1/files/*path", Handle(h.deleteFile))
}

// purposes are the upload purposes OpenAI accepts.
var purposes = []string{"assistants", "batch", "fine-tune", "vision", "user_data", "evals"}

// Bounds of expires_after.seconds (OpenAI's: an hour to 30 days).
const (
	minExpiresAfter = 3600
	maxExpiresAfter = 30 * 24 * 3600
)

// fileObject is OpenAI's file object.
type fileObject struct {
	ID            string  `json:"id"`
	Object        string  `json:"object"`
	Bytes         int64   `json:"bytes"`
	CreatedAt     int64   `json:"created_at"`
	ExpiresAt     *int64  `json:"expires_at"`
	Filename      string  `json:"filename"`
	Purpose       string  `json:"purpose"`
	Status        string  `json:"status"`
	StatusDetails *string `json:"status_details"`
}

func toFileObject(f batches.File) fileObject {
	return fileObject{ID: f.ID, Object: "file", Bytes: f.Bytes, CreatedAt: f.CreatedAt.Unix(), ExpiresAt: unixOrNil(f.ExpiresAt),
		Filename: f.Filename, Purpose: f.Purpose, Status: "processed"}
}

// unixOrNil is t in Unix seconds, or nil (null) for the zero time.
func unixOrNil(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	u := t.Unix()
	return &u
}

// list is OpenAI's cursor page.
type list[T any] struct {
	Object  string  `json:"object"`
	Data    []T     `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

func newList[T any](data []T, more bool, id func(T) string) list[T] {
	l := list[T]{Object: "list", Data: data, HasMore: more}
	if len(data) > 0 {
		first, last := id(data[0]), id(data[len(data)-1])
		l.FirstID, l.LastID = &first, &last
	}
	return l
}

// fileNotFound is the one 404 every unknown, malformed or hostile file id gets: the id as the
// client sent it, never a path or an OS error.
func fileNotFound(id string) *Error {
	return &Error{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "id", Message: "No such File object: " + id}
}

func (h *handlers) uploadFile(c *gin.Context) error {
	mr, err := c.Request.MultipartReader()
	if err != nil {
		return invalid("file", "POST /v1/files takes multipart/form-data with the fields file and purpose")
	}
	var (
		upload                   *batches.Upload
		filename, purpose        string
		anchor, seconds          string
		havePurpose, haveSeconds bool
	)
	defer func() {
		if upload != nil {
			upload.Discard() // nothing once committed
		}
	}()
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return invalid("", "malformed multipart body: "+err.Error())
		}
		switch part.FormName() {
		case "file":
			if upload != nil {
				return invalid("file", "send one file per upload")
			}
			filename = part.FileName()
			if upload, err = h.files.Receive(c.Request.Context(), part); err != nil {
				return uploadError(err)
			}
		case "purpose":
			purpose, havePurpose, err = formValue(part)
		case "expires_after[anchor]":
			anchor, _, err = formValue(part)
		case "expires_after[seconds]":
			seconds, haveSeconds, err = formValue(part)
		}
		part.Close()
		if err != nil {
			return err
		}
	}
	if upload == nil {
		return invalid("file", "missing required parameter 'file': send the content as the multipart field file")
	}
	if !havePurpose {
		return invalid("purpose", "missing required parameter 'purpose': one of "+strings.Join(purposes, ", "))
	}
	if !slices.Contains(purposes, purpose) {
		return invalid("purpose", fmt.Sprintf("purpose %q: use one of %s", purpose, strings.Join(purposes, ", ")))
	}
	expires, err := expiresAfter(anchor, seconds, haveSeconds)
	if err != nil {
		return err
	}
	if filename == "" {
		filename = "upload"
	}
	f, err := upload.Commit(c.Request.Context(), batches.NewFile{Filename: filename, Purpose: purpose, ExpiresAfter: expires})
	if err != nil {
		return uploadError(err)
	}
	upload = nil
	c.JSON(http.StatusOK, toFileObject(f))
	return nil
}

// formValue reads a small text field of a multipart body.
func formValue(part *multipart.Part) (string, bool, error) {
	const most = 1 << 10
	b, err := io.ReadAll(io.LimitReader(part, most+1))
	if err != nil {
		return "", false, invalid(part.FormName(), "malformed multipart body: "+err.Error())
	}
	if len(b) > most {
		return "", false, invalid(part.FormName(), part.FormName()+" is too long")
	}
	return string(b), true, nil
}

// expiresAfter reads expires_after[anchor] and expires_after[seconds].
func expiresAfter(anchor, seconds string, given bool) (time.Duration, error) {
	if !given {
		if anchor != "" {
			return 0, invalid("expires_after[seconds]", "expires_after needs seconds as well as the anchor")
		}
		return 0, nil
	}
	if anchor != "" && anchor != "created_at" {
		return 0, invalid("expires_after[anchor]", fmt.Sprintf("expires_after[anchor] %q: the only anchor is created_at", anchor))
	}
	n, err := strconv.ParseInt(strings.TrimSpace(seconds), 10, 64)
	if err != nil || n < minExpiresAfter || n > maxExpiresAfter {
		return 0, invalid("expires_after[seconds]", fmt.Sprintf("expires_after[seconds] must be a whole number from %d (an hour) to %d (30 days), got %q",
			minExpiresAfter, maxExpiresAfter, seconds))
	}
	return time.Duration(n) * time.Second, nil
}

// uploadError maps server/batches' upload failures to OpenAI errors.
func uploadError(err error) error {
	switch {
	case errors.Is(err, batches.ErrFilesQuota):
		return &Error{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "files_quota_exceeded", Param: "file", Message: err.Error()}
	case errors.Is(err, batches.ErrNoFiles):
		return &Error{Status: http.StatusServiceUnavailable, Type: "server_error", Message: err.Error()}
	case errors.Is(err, batches.ErrUploadCut):
		return invalid("file", err.Error())
	default:
		return err
	}
}

func (h *handlers) listFiles(c *gin.Context) error {
	limit, err := queryLimit(c, 10_000, 10_000)
	if err != nil {
		return err
	}
	q := batches.FileQuery{Purpose: c.Query("purpose"), After: c.Query("after"), Limit: limit}
	switch order := c.DefaultQuery("order", "desc"); order {
	case "asc":
		q.Ascending = true
	case "desc":
	default:
		return invalid("order", fmt.Sprintf("order %q: use asc or desc", order))
	}
	files, more, err := h.files.Files(c.Request.Context(), q)
	if err != nil {
		return err
	}
	data := make([]fileObject, 0, len(files))
	for _, f := range files {
		data = append(data, toFileObject(f))
	}
	c.JSON(http.StatusOK, newList(data, more, func(f fileObject) string { return f.ID }))
	return nil
}

// queryLimit reads ?limit=, from 1 to most (def when absent).
func queryLimit(c *gin.Context, def, most int) (int, error) {
	v, ok := c.GetQuery("limit")
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, invalid("limit", fmt.Sprintf("limit must be a whole number from 1 to %d, got %q", most, v))
	}
	return n, nil
}

// fileRoute splits the wildcard of /v1/files/*path into the id and whether it asks for the
// content.
func fileRoute(c *gin.Context) (id string, content bool) {
	path := strings.TrimPrefix(c.Param("path"), "/")
	if id, ok := strings.CutSuffix(path, "/content"); ok {
		return id, true
	}
	return path, false
}

func (h *handlers) getFile(c *gin.Context) error {
	id, content := fileRoute(c)
	if !content {
		f, err := h.files.File(c.Request.Context(), id)
		if err != nil {
			return fileError(id, err)
		}
		c.JSON(http.StatusOK, toFileObject(f))
		return nil
	}
	f, r, err := h.files.OpenFile(c.Request.Context(), id)
	if err != nil {
		return fileError(id, err)
	}
	defer r.Close()
	c.Header("Content-Type", "application/octet-stream")
	c.Header("Content-Disposition", fmt.Sprintf("attachment; filename=%q", f.Filename))
	http.ServeContent(c.Writer, c.Request, "", f.CreatedAt, r)
	return nil
}

func (h *handlers) deleteFile(c *gin.Context) error {
	id, content := fileRoute(c)
	if content {
		return fileNotFound(id + "/content")
	}
	if err := h.files.DeleteFile(c.Request.Context(), id); err != nil {
		return fileError(id, err)
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "object": "file", "deleted": true})
	return nil
}

// fileError is the 404 for a file that is not found, and err otherwise.
func fileError(id string, err error) error {
	if errors.Is(err, batches.ErrFileNotFound) {
		return fileNotFound(id)
	}
	return err
}
