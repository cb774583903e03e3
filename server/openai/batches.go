package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/batches"
)

// Batches: POST /v1/batches, GET /v1/batches, GET /v1/batches/{id} and
// POST /v1/batches/{id}/cancel in OpenAI's shapes. server/batches runs the lines; this
// dialect tells it how (ServeBatchLines): each line's body goes through the same handler as
// the HTTP request would, in process, so the output file holds exactly what the endpoint
// serves.

func (h *handlers) routesBatches(r gin.IRouter) {
	r.POST("/v1/batches", Handle(h.createBatch))
	r.GET("/v1/batches", Handle(h.listBatches))
	// Wildcards, so that any id (one with "/" included) gets the batch 404.
	r.GET("/v1/batches/*path", Handle(h.getBatch))
	r.POST("/v1/batches/*path", Handle(h.cancelBatch))

	lines := gin.New()
	lines.POST("/v1/chat/completions", Handle(h.chatCompletions))
	lines.POST("/v1/completions", Handle(h.completions))
	lines.POST("/v1/embeddings", Handle(h.embeddings))
	for _, url := range []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings"} {
		h.files.ServeBatchLines(url, runLine(lines, url))
	}
}

// batchObject is OpenAI's batch object.
type batchObject struct {
	ID               string          `json:"id"`
	Object           string          `json:"object"`
	Endpoint         string          `json:"endpoint"`
	Model            string          `json:"model,omitempty"`
	Errors           *batchErrors    `json:"errors"`
	InputFileID      string          `json:"input_file_id"`
	CompletionWindow string          `json:"completion_window"`
	Status           string          `json:"status"`
	OutputFileID     *string         `json:"output_file_id"`
	ErrorFileID      *string         `json:"error_file_id"`
	CreatedAt        int64           `json:"created_at"`
	InProgressAt     *int64          `json:"in_progress_at"`
	ExpiresAt        *int64          `json:"expires_at"`
	FinalizingAt     *int64          `json:"finalizing_at"`
	CompletedAt      *int64          `json:"completed_at"`
	FailedAt         *int64          `json:"failed_at"`
	ExpiredAt        *int64          `json:"expired_at"`
	CancellingAt     *int64          `json:"cancelling_at"`
	CancelledAt      *int64          `json:"cancelled_at"`
	RequestCounts    requestCounts   `json:"request_counts"`
	Usage            batchUsage      `json:"usage"`
	Metadata         json.RawMessage `json:"metadata"`
}

type batchErrors struct {
	Object string       `json:"object"`
	Data   []batchError `json:"data"`
}

type batchError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Line    *int    `json:"line"`
}

type requestCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

type batchUsage struct {
	InputTokens         int64         `json:"input_tokens"`
	InputTokensDetails  cachedDetails `json:"input_tokens_details"`
	OutputTokens        int64         `json:"output_tokens"`
	OutputTokensDetails reasonDetails `json:"output_tokens_details"`
	TotalTokens         int64         `json:"total_tokens"`
}

type cachedDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

type reasonDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

func stringOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toBatchObject(b batches.Batch) batchObject {
	out := batchObject{
		ID: b.ID, Object: "batch", Endpoint: b.Endpoint, Model: b.Model, InputFileID: b.InputFileID,
		CompletionWindow: b.CompletionWindow, Status: b.Status,
		OutputFileID: stringOrNil(b.OutputFileID), ErrorFileID: stringOrNil(b.ErrorFileID),
		CreatedAt: b.CreatedAt.Unix(), InProgressAt: unixOrNil(b.InProgressAt), ExpiresAt: unixOrNil(b.ExpiresAt),
		FinalizingAt: unixOrNil(b.FinalizingAt), CompletedAt: unixOrNil(b.CompletedAt), FailedAt: unixOrNil(b.FailedAt),
		CancellingAt: unixOrNil(b.CancellingAt), CancelledAt: unixOrNil(b.CancelledAt),
		RequestCounts: requestCounts{Total: b.Total, Completed: b.Completed, Failed: b.Failed},
		Usage: batchUsage{InputTokens: b.InputTokens, InputTokensDetails: cachedDetails{CachedTokens: b.CachedTokens},
			OutputTokens: b.OutputTokens, TotalTokens: b.InputTokens + b.OutputTokens},
		Metadata: b.Metadata,
	}
	if out.Metadata == nil {
		out.Metadata = json.RawMessage("null")
	}
	if len(b.Errors) > 0 {
		out.Errors = &batchErrors{Object: "list", Data: []batchError{}}
		for _, e := range b.Errors {
			be := batchError{Code: e.Code, Message: e.Message, Param: stringOrNil(e.Param)}
			if e.Line > 0 {
				be.Line = &e.Line
			}
			out.Errors.Data = append(out.Errors.Data, be)
		}
	}
	return out
}

// batchRequest is POST /v1/batches.
type batchRequest struct {
	InputFileID        *string          `json:"input_file_id"`
	Endpoint           *string          `json:"endpoint"`
	CompletionWindow   *string          `json:"completion_window"`
	Metadata           *json.RawMessage `json:"metadata"`
	OutputExpiresAfter *struct {
		Anchor  string `json:"anchor"`
		Seconds int64  `json:"seconds"`
	} `json:"output_expires_after"`
}

// Metadata bounds (OpenAI's): 16 pairs, keys up to 64 characters, values up to 512.
const (
	maxMetadataPairs = 16
	maxMetadataKey   = 64
	maxMetadataValue = 512
)

func (h *handlers) createBatch(c *gin.Context) error {
	var req batchRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	if req.InputFileID == nil || *req.InputFileID == "" {
		return invalid("input_file_id", "missing required parameter 'input_file_id': upload the JSONL input with POST /v1/files (purpose batch) and pass its id")
	}
	nb := batches.NewBatch{InputFileID: *req.InputFileID, Endpoint: "/v1/chat/completions", CompletionWindow: "24h"}
	if req.Endpoint != nil {
		nb.Endpoint = *req.Endpoint
	}
	if !slices.Contains(batches.BatchEndpoints, nb.Endpoint) {
		return invalid("endpoint", fmt.Sprintf("endpoint %q cannot be batched; use one of /v1/chat/completions, /v1/completions, /v1/embeddings", nb.Endpoint))
	}
	if req.CompletionWindow != nil && *req.CompletionWindow != "24h" {
		return invalid("completion_window", fmt.Sprintf("completion_window %q: the only window is 24h", *req.CompletionWindow))
	}
	if req.Metadata != nil && string(*req.Metadata) != "null" {
		if err := checkBatchMetadata(*req.Metadata); err != nil {
			return err
		}
		nb.Metadata = *req.Metadata
	}
	if e := req.OutputExpiresAfter; e != nil {
		if e.Anchor != "" && e.Anchor != "created_at" {
			return invalid("output_expires_after.anchor", fmt.Sprintf("anchor %q: the only anchor is created_at", e.Anchor))
		}
		if e.Seconds < minExpiresAfter || e.Seconds > maxExpiresAfter {
			return invalid("output_expires_after.seconds", fmt.Sprintf("seconds must be from %d (an hour) to %d (30 days), got %d", minExpiresAfter, maxExpiresAfter, e.Seconds))
		}
		nb.OutputExpiresAfter = time.Duration(e.Seconds) * time.Second
	}
	b, err := h.files.CreateBatch(c.Request.Context(), nb)
	if err != nil {
		return batchCreateError(nb.InputFileID, err)
	}
	c.JSON(http.StatusOK, toBatchObject(b))
	return nil
}

// checkBatchMetadata accepts OpenAI's metadata: an object of up to 16 string values.
func checkBatchMetadata(raw json.RawMessage) error {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return invalid("metadata", "metadata must be an object of string values")
	}
	if len(m) > maxMetadataPairs {
		return invalid("metadata", fmt.Sprintf("metadata may hold at most %d keys, got %d", maxMetadataPairs, len(m)))
	}
	for k, v := range m {
		s, ok := v.(string)
		switch {
		case !ok:
			return invalid("metadata", fmt.Sprintf("metadata[%q] must be a string", k))
		case len(k) > maxMetadataKey:
			return invalid("metadata", fmt.Sprintf("metadata keys may be at most %d characters", maxMetadataKey))
		case len(s) > maxMetadataValue:
			return invalid("metadata", fmt.Sprintf("metadata[%q] may be at most %d characters", k, maxMetadataValue))
		}
	}
	return nil
}

// batchCreateError maps server/batches' refusals of a new batch.
func batchCreateError(fileID string, err error) error {
	switch {
	case errors.Is(err, batches.ErrFileNotFound):
		e := fileNotFound(fileID)
		e.Param = "input_file_id"
		return e
	case errors.Is(err, batches.ErrBatchQueueFull):
		return &Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "batch_queue_full", Message: err.Error()}
	case errors.Is(err, batches.ErrNoFiles):
		return &Error{Status: http.StatusServiceUnavailable, Type: "server_error", Message: err.Error()}
	case errors.Is(err, llm.ErrInvalidInput):
		return invalid("input_file_id", err.Error())
	default:
		return err
	}
}

// batchNotFound is the 404 of an unknown batch id.
func batchNotFound(id string) *Error {
	return &Error{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "batch_id", Message: "No such Batch object: " + id}
}

func batchError404(id string, err error) error {
	if errors.Is(err, batches.ErrBatchNotFound) {
		return batchNotFound(id)
	}
	return err
}

func (h *handlers) getBatch(c *gin.Context) error {
	id := strings.TrimPrefix(c.Param("path"), "/")
	b, err := h.files.Batch(c.Request.Context(), id)
	if err != nil {
		return batchError404(id, err)
	}
	c.JSON(http.StatusOK, toBatchObject(b))
	return nil
}

func (h *handlers) listBatches(c *gin.Context) error {
	limit, err := queryLimit(c, 20, 100)
	if err != nil {
		return err
	}
	bs, more, err := h.files.Batches(c.Request.Context(), c.Query("after"), limit)
	if err != nil {
		return err
	}
	data := make([]batchObject, 0, len(bs))
	for _, b := range bs {
		data = append(data, toBatchObject(b))
	}
	c.JSON(http.StatusOK, newList(data, more, func(b batchObject) string { return b.ID }))
	return nil
}

func (h *handlers) cancelBatch(c *gin.Context) error {
	id, ok := strings.CutSuffix(strings.TrimPrefix(c.Param("path"), "/"), "/cancel")
	if !ok {
		return &Error{Status: http.StatusNotFound, Type: "invalid_request_error",
			Message: fmt.Sprintf("unknown route POST %s; cancel a batch with POST /v1/batches/{id}/cancel", c.Request.URL.Path)}
	}
	b, err := h.files.CancelBatch(c.Request.Context(), id)
	if errors.Is(err, batches.ErrBatchFinished) {
		return &Error{Status: http.StatusConflict, Type: "invalid_request_error", Message: err.Error()}
	}
	if err != nil {
		return batchError404(id, err)
	}
	c.JSON(http.StatusOK, toBatchObject(b))
	return nil
}

// runLine runs a batch line's body through router as a POST to url, in process, and returns
// what the endpoint answered. A line that asks to stream is refused (the output file holds
// whole replies); a line refused by a rate limit (429 with Retry-After, e.g. the
// fill-in-the-middle bucket) waits and tries again rather than fail.
func runLine(router http.Handler, url string) batches.LineFunc {
	return func(ctx context.Context, body json.RawMessage) (batches.LineResponse, error) {
		var peek struct {
			Stream bool `json:"stream"`
		}
		if json.Unmarshal(body, &peek) == nil && peek.Stream {
			e := invalid("stream", "stream is not supported in a batch: drop it; the output file holds each whole reply")
			b, _ := json.Marshal(e.wire())
			return batches.LineResponse{Status: e.Status, Body: b}, nil
		}
		for {
			rec, err := serveLine(ctx, router, url, body)
			if err != nil {
				return batches.LineResponse{}, err
			}
			wait, _ := strconv.Atoi(rec.header.Get("Retry-After"))
			if rec.status != http.StatusTooManyRequests || wait <= 0 {
				return batches.LineResponse{Status: rec.status, Body: rec.body.Bytes(), Usage: lineUsage(rec.body.Bytes())}, nil
			}
			select {
			case <-time.After(time.Duration(wait) * time.Second):
			case <-ctx.Done():
				return batches.LineResponse{}, ctx.Err()
			}
		}
	}
}

// serveLine serves one request in process; a handler panic is the line's error, not a crash.
func serveLine(ctx context.Context, router http.Handler, url string, body []byte) (rec *lineRecorder, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = "batch:0" // the client the rate limits see: the batch runner
	rec = &lineRecorder{header: http.Header{}}
	defer func() {
		if v := recover(); v != nil {
			slog.Error("batch line panic", "url", url, "panic", v)
			rec, err = nil, &batches.LineError{Code: "server_error", Message: fmt.Sprintf("internal error: %v", v)}
		}
	}()
	router.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec, nil
}

// lineUsage reads the usage of a reply body (chat or text completion).
func lineUsage(body []byte) llm.Usage {
	var r struct {
		Usage *usage `json:"usage"`
	}
	if json.Unmarshal(body, &r) != nil || r.Usage == nil {
		return llm.Usage{}
	}
	u := llm.Usage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens}
	if r.Usage.PromptTokensDetails != nil {
		u.CachedTokens = r.Usage.PromptTokensDetails.CachedTokens
	}
	return u
}

// lineRecorder is the http.ResponseWriter of a batch line: it keeps the status and body.
type lineRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *lineRecorder) Header() http.Header { return r.header }

func (r *lineRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *lineRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// Flush does nothing: the body is whole when the handler returns.
func (r *lineRecorder) Flush() {}
