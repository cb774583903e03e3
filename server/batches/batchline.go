package batches

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// One batch line's run, its result committed with its count, and the output and error files
// written when every line has its result (see batchrun.go for the runner).

// batchInput is one line of a batch's input file.
type batchInput struct {
	CustomID *string         `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// batchOutput is one line of a batch's output or error file, in OpenAI's shape: a response, or
// an error for a line that got none.
type batchOutput struct {
	ID       string          `json:"id"`
	CustomID string          `json:"custom_id"`
	Response *batchResponse  `json:"response"`
	Error    *batchLineError `json:"error"`
}

type batchResponse struct {
	StatusCode int             `json:"status_code"`
	RequestID  string          `json:"request_id"`
	Body       json.RawMessage `json:"body"`
}

type batchLineError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// runLine runs line idx of b, calls done once its request has ended, and commits its result
// with its count. A line stopped by the shutdown is not committed: it runs again after the
// restart.
func (s *Service) runLine(ctx context.Context, b store.Batch, idx int, raw []byte, done func()) {
	var in batchInput
	if err := json.Unmarshal(raw, &in); err != nil || in.CustomID == nil {
		// Validated before the batch started; the input changed under it.
		in = batchInput{CustomID: new(string)}
	}
	out := batchOutput{ID: "batch_req_" + randomHex(12), CustomID: *in.CustomID}
	var usage store.LineUsage
	run := s.lineFunc(in.URL)
	lineCtx, admitted, refused := s.admitLine(core.AsBatchLine(ctx, b.ID))
	defer admitted()
	var se *llm.StatusError
	switch {
	case run == nil:
		out.Error = &batchLineError{Code: "unsupported_endpoint", Message: fmt.Sprintf("%s is not served", in.URL)}
	case errors.As(refused, &se):
		done()
		out.Error = &batchLineError{Code: cmp.Or(se.Code, "rate_limit_exceeded"), Message: se.Message}
	case refused != nil:
		done()
		out.Error = &batchLineError{Code: "server_error", Message: refused.Error()}
	default:
		resp, err := s.runOutsideMoves(lineCtx, run, in.Body)
		done()
		if failed := err != nil || resp.Status/100 != 2; failed && (s.stopIfClosed() || ctx.Err() != nil) {
			return // stopped by the shutdown (a reply that came whole is kept)
		}
		var le *LineError
		switch {
		case errors.As(err, &le):
			out.Error = &batchLineError{Code: le.Code, Message: le.Message}
		case err != nil:
			out.Error = &batchLineError{Code: "server_error", Message: err.Error()}
		default:
			body := resp.Body
			if !json.Valid(body) {
				body, _ = json.Marshal(string(body))
			}
			out.Response = &batchResponse{StatusCode: resp.Status, RequestID: "req_" + randomHex(12), Body: body}
			usage = store.LineUsage{InputTokens: int64(resp.Usage.PromptTokens), CachedTokens: int64(resp.Usage.CachedTokens),
				OutputTokens: int64(resp.Usage.CompletionTokens)}
		}
	}
	ok := out.Error == nil && out.Response.StatusCode/100 == 2
	result, err := json.Marshal(out)
	if err == nil {
		err = s.store.SaveBatchLine(context.WithoutCancel(ctx), b.ID, idx, !ok, result, usage)
	}
	if err != nil {
		slog.Error("a batch line's result could not be saved; it runs again when the batch resumes", "batch", b.ID, "line", idx+1, "err", err)
		return
	}
	s.core.Observer().BatchLine(ok)
}

// admitLine is Config.AdmitLine's answer for a line, or the line's own context when unset.
func (s *Service) admitLine(ctx context.Context) (context.Context, func(), error) {
	if s.cfg.AdmitLine == nil {
		return ctx, func() {}, nil
	}
	lineCtx, admitted, err := s.cfg.AdmitLine(ctx)
	if err != nil {
		return ctx, func() {}, err
	}
	return lineCtx, admitted, nil
}

// finishBatch writes b's output and error files and ends it with status.
func (s *Service) finishBatch(ctx context.Context, b store.Batch, status string) error {
	began := time.Now()
	var written []string
	files := make([]*store.File, 2)
	for i, failed := range []bool{false, true} {
		f, err := s.writeResults(ctx, b, failed)
		if err != nil {
			removeAll(written)
			return err
		}
		if f != nil {
			written = append(written, filepath.Join(s.cfg.Files.Dir, f.ID))
		}
		files[i] = f
	}
	end := store.BatchEnd{Status: status, Output: files[0], Errors: files[1], FinalizingAt: began, At: time.Now()}
	if err := s.store.FinishBatch(context.WithoutCancel(ctx), b.ID, end); err != nil {
		removeAll(written)
		return err
	}
	return nil
}

func removeAll(paths []string) {
	for _, p := range paths {
		os.Remove(p)
	}
}

// writeResults writes b's output lines (or error lines) to a new file, synced and renamed to
// its id; nil when there are none.
func (s *Service) writeResults(ctx context.Context, b store.Batch, failed bool) (*store.File, error) {
	dir := s.cfg.Files.Dir
	tmp, err := os.CreateTemp(dir, outputPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("write the batch's results: %w", err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name()) // gone after the rename
	}()
	w := bufio.NewWriter(tmp)
	var lines, n int64
	err = s.store.EachBatchLine(ctx, b.ID, failed, func(result []byte) error {
		lines++
		k, err := w.Write(append(result, '\n'))
		n += int64(k)
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		return nil, fmt.Errorf("write the batch's results: %w", err)
	}
	if lines == 0 {
		return nil, nil
	}
	kind := "output"
	if failed {
		kind = "error"
	}
	now := time.Now()
	f := &store.File{ID: newFileID(), Filename: fmt.Sprintf("%s_%s.jsonl", b.ID, kind), Purpose: "batch_output", Bytes: n,
		CreatedAt: now, Owner: b.Owner, ExpiresAt: s.expiry(now, b.OutputExpires)}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, f.ID)); err != nil {
		return nil, fmt.Errorf("write the batch's results: %w", err)
	}
	syncDir(dir)
	return f, nil
}

// runOutsideMoves runs a line once no move of the models folder runs, and again when a move
// that began meanwhile refused it: a move lasts minutes, a batch up to a day, so its lines wait
// rather than each fail with the move's 409.
func (s *Service) runOutsideMoves(ctx context.Context, run LineFunc, body json.RawMessage) (LineResponse, error) {
	for {
		select {
		case <-s.core.ModelsMoveEnded():
		case <-ctx.Done():
			return LineResponse{}, ctx.Err()
		}
		resp, err := run(ctx, body)
		refused := core.IsModelsMoving(err) || err == nil && resp.Status == http.StatusConflict
		if !refused || s.core.CheckModelsMove("") == nil {
			return resp, err
		}
	}
}
