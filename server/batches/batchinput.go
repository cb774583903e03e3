package batches

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/superfluid/superfluid/server/store"
)

// Reading and checking a batch's input file: JSONL, one request a line.

// maxLineBytes bounds one input line (the HTTP body limit).
const maxLineBytes = 100 << 20

// maxReasons bounds the validation errors a failed batch lists.
const maxReasons = 100

var errLineTooLong = fmt.Errorf("the line is longer than %d MiB", maxLineBytes>>20)

// lineReader reads a JSONL file's lines, skipping blank ones: the n-th line it returns is the
// batch's line n (from 0), whether validating or running.
type lineReader struct {
	br   *bufio.Reader
	line int // physical lines read, for error messages
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next non-blank line and its number in the file (from 1). A line over
// maxLineBytes is skipped and reported as errLineTooLong; io.EOF ends the file.
func (lr *lineReader) next() ([]byte, int, error) {
	for {
		var line []byte
		tooLong := false
		for {
			chunk, err := lr.br.ReadSlice('\n')
			if !tooLong {
				if len(line)+len(chunk) > maxLineBytes {
					tooLong, line = true, nil
				} else {
					line = append(line, chunk...)
				}
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, lr.line, err
			}
			if len(chunk) == 0 && len(line) == 0 && !tooLong && errors.Is(err, io.EOF) {
				return nil, lr.line, io.EOF
			}
			break
		}
		lr.line++
		if tooLong {
			return nil, lr.line, errLineTooLong
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line, lr.line, nil
		}
	}
}

// validateBatch reads b's input file through: every line must be JSON with a unique
// custom_id, method POST, the batch's endpoint as url, and a body naming a model that exists.
// It returns the number of lines and the first line's model, or why the batch fails.
func (s *Service) validateBatch(ctx context.Context, b store.Batch) (total int, model string, reasons []store.BatchError, err error) {
	in, err := s.openInput(ctx, b.InputFileID)
	if errors.Is(err, ErrFileNotFound) {
		return 0, "", []store.BatchError{inputGone(b.InputFileID)}, nil
	}
	if err != nil {
		return 0, "", nil, err
	}
	defer in.Close()
	add := func(e store.BatchError) {
		if len(reasons) < maxReasons {
			reasons = append(reasons, e)
		}
	}
	seen := map[string]bool{}
	models := map[string]error{}
	lines := newLineReader(in)
	for {
		if ctx.Err() != nil {
			return 0, "", nil, ctx.Err()
		}
		raw, n, err := lines.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, errLineTooLong) {
			return 0, "", nil, err
		}
		if total++; total > maxBatchLines {
			add(store.BatchError{Code: "too_many_tasks", Line: n,
				Message: fmt.Sprintf("a batch may have at most %d lines; split the file", maxBatchLines)})
			break
		}
		if err != nil {
			add(store.BatchError{Code: "invalid_json_line", Line: n, Message: err.Error()})
			continue
		}
		var line batchInput
		if err := json.Unmarshal(raw, &line); err != nil {
			add(store.BatchError{Code: "invalid_json_line", Line: n,
				Message: fmt.Sprintf("this line is not a JSON object {\"custom_id\", \"method\", \"url\", \"body\"}: %v", err)})
			continue
		}
		switch {
		case line.CustomID == nil || *line.CustomID == "":
			add(store.BatchError{Code: "missing_required_parameter", Param: "custom_id", Line: n, Message: "the line has no custom_id"})
		case seen[*line.CustomID]:
			add(store.BatchError{Code: "duplicate_custom_id", Param: "custom_id", Line: n,
				Message: fmt.Sprintf("custom_id %q is used by an earlier line; each line needs its own", *line.CustomID)})
		default:
			seen[*line.CustomID] = true
		}
		if line.Method != "POST" {
			add(store.BatchError{Code: "invalid_method", Param: "method", Line: n,
				Message: fmt.Sprintf("method %q: batch lines must be POST", line.Method)})
		}
		if line.URL != b.Endpoint {
			add(store.BatchError{Code: "invalid_url", Param: "url", Line: n,
				Message: fmt.Sprintf("url %q is not the batch's endpoint %s; every line must use it", line.URL, b.Endpoint)})
		}
		var body struct {
			Model *string `json:"model"`
		}
		if len(line.Body) == 0 || line.Body[0] != '{' || json.Unmarshal(line.Body, &body) != nil {
			add(store.BatchError{Code: "invalid_request", Param: "body", Line: n, Message: "body must be the request's JSON object"})
			continue
		}
		if body.Model == nil || *body.Model == "" {
			add(store.BatchError{Code: "missing_required_parameter", Param: "body.model", Line: n, Message: "the body names no model"})
			continue
		}
		name := *body.Model
		merr, checked := models[name]
		if !checked {
			_, merr = s.core.ModelFor(ctx, name) // as the batch's key sees them
			models[name] = merr
		}
		if merr != nil {
			add(store.BatchError{Code: "model_not_found", Param: "body.model", Line: n,
				Message: fmt.Sprintf("the model %q does not exist; GET /v1/models lists the served models", name)})
			continue
		}
		if model == "" {
			model = name
		}
	}
	if total == 0 {
		add(store.BatchError{Code: "empty_file", Message: fmt.Sprintf("the input file %s has no lines", b.InputFileID)})
	}
	return total, model, reasons, nil
}
