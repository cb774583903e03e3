package ollama

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
)

// admin guards the model-management routes (pull, delete, copy) with local.
func admin(h Handler) gin.HandlerFunc {
	return Handle(func(c *gin.Context) error {
		if err := local(c); err != nil {
			return err
		}
		return h(c)
	})
}

// local refuses model management to a key that is not an admin key. Without keys, being the
// machine's own user is the only credential model management has, and a loopback peer is the
// proof of it (see auth.Admin).
func local(c *gin.Context) error {
	ok, refusal := auth.Admin(c.Request)
	if ok {
		return nil
	}
	return &Error{Status: http.StatusForbidden, Message: refusal}
}

// Ollama's pull statuses around the per-file progress lines.
const (
	statusManifest  = "pulling manifest"
	statusVerifying = "verifying sha256 digest"
	statusWriting   = "writing manifest"
	statusSuccess   = "success"
)

// refForms is how the pull errors show the references this server pulls.
const refForms = "hf.co/OWNER/REPO:QUANT (e.g. hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M), OWNER/REPO:QUANT, OWNER/REPO/FILE.gguf or OWNER/REPO"

// pull fetches a Hugging Face model into the catalog. Ollama-library names are refused: this
// server has no registry of its own.
func (h *handlers) pull(c *gin.Context) error {
	var req pullRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	name := cmp.Or(req.Model, req.Name)
	if name == "" {
		return badRequest("model is required: name a Hugging Face model as %s", refForms)
	}
	if err := h.svc.CheckReference(name); errors.Is(err, core.ErrNotReference) {
		return badRequest("%q is not a Hugging Face model: only Hugging Face references are pulled (the Ollama library is not available); name one as %s", name, refForms)
	} else if err != nil {
		return badRequest("%v; use %s", err, refForms)
	}
	ctx := c.Request.Context()
	if req.Stream != nil && !*req.Stream {
		if _, err := h.svc.PullModel(ctx, name, nil); err != nil {
			return err
		}
		c.JSON(http.StatusOK, progress{Status: statusSuccess})
		return nil
	}

	// The pull runs beside the handler: its progress callback feeds a download other clients
	// may share, so it only queues; this goroutine writes at the client's pace.
	q := &progressQueue{ready: make(chan struct{}, 1)}
	done := make(chan error, 1)
	go func() {
		_, err := h.svc.PullModel(ctx, name, q.put)
		done <- err
	}()
	s := &pullStream{out: &ndjson{w: c.Writer, timeout: h.opts.WriteTimeout}, last: map[string]progress{}}
	for {
		select {
		case <-q.ready:
			s.report(q.take())
		case err := <-done:
			s.report(q.take()) // the callback is not called after PullModel returns
			switch {
			case err == nil:
				s.finish()
			case !s.out.committed:
				return err // failed before any progress (unknown repo, no such quant): a proper status
			default:
				_ = s.out.line(errorBody{Error: toError(err).Message})
			}
			return nil
		}
	}
}

// progressQueue hands download progress to the handler without ever making the download wait.
// Consecutive reports of one file in one state collapse into the latest, so it stays small
// however slowly the client reads.
type progressQueue struct {
	mu    sync.Mutex
	items []core.PullProgress
	ready chan struct{} // holds a token while items is not empty
}

func (q *progressQueue) put(p core.PullProgress) {
	q.mu.Lock()
	if n := len(q.items); n > 0 && q.items[n-1].File == p.File && q.items[n-1].Status == p.Status {
		q.items[n-1] = p
	} else {
		q.items = append(q.items, p)
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *progressQueue) take() []core.PullProgress {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

// pullStream writes a pull's NDJSON lines in Ollama's order: "pulling manifest", each file's
// "pulling <digest>" progress, "verifying sha256 digest", "writing manifest", "success".
// "pulling manifest" waits for the first progress (the reference has resolved by then), so that
// a reference that does not resolve still gets its own status instead of a 200 stream.
type pullStream struct {
	out       *ndjson
	last      map[string]progress // the last progress line of each file
	verifying bool                // the last line written was "verifying sha256 digest"
}

func (s *pullStream) status(status string) {
	if !s.out.committed && status != statusManifest {
		_ = s.out.line(progress{Status: statusManifest})
	}
	_ = s.out.line(progress{Status: status}) // a write error means the client left; the pull's context ends
	s.verifying = status == statusVerifying
}

func (s *pullStream) report(ps []core.PullProgress) {
	for _, p := range ps {
		if !s.out.committed {
			s.status(statusManifest)
		}
		if p.Status == core.PullDone {
			continue // verifying already said all there is
		}
		line := progress{Status: "pulling " + layerName(p), Digest: p.Digest, Total: p.Total, Completed: p.Completed}
		if line != s.last[p.File] {
			s.last[p.File] = line
			_ = s.out.line(line)
			s.verifying = false
		}
		if p.Status == core.PullVerifying && !s.verifying {
			s.status(statusVerifying)
		}
	}
}

// finish writes the closing lines; a model already in the catalog gets them all at once.
func (s *pullStream) finish() {
	if !s.verifying {
		s.status(statusVerifying)
	}
	s.status(statusWriting)
	s.status(statusSuccess)
}

// layerName is what Ollama's clients show for a file: the first 12 hex digits of its digest,
// or its file name while the digest is unknown (a file outside Git LFS).
func layerName(p core.PullProgress) string {
	if hex, ok := strings.CutPrefix(p.Digest, "sha256:"); ok && hex != "" {
		return hex[:min(12, len(hex))]
	}
	return path.Base(p.File)
}

// remove is DELETE /api/delete: 200 with an empty body, as Ollama answers. A generation running
// on the model finishes first.
func (h *handlers) remove(c *gin.Context) error {
	var req deleteRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	name := cmp.Or(req.Model, req.Name)
	m, err := h.model(c.Request.Context(), name)
	switch {
	case errors.Is(err, core.ErrIsAdapter): // a LoRA adapter of the catalog goes as a model does
		_, err = h.svc.DeleteModel(c.Request.Context(), name)
	case err == nil:
		_, err = h.svc.DeleteModel(c.Request.Context(), m.ID)
	}
	switch {
	case err != nil && toError(err).Status == http.StatusNotFound:
		return &Error{Status: http.StatusNotFound, Message: fmt.Sprintf("model '%s' not found", name)} // Ollama's words
	case err != nil:
		return err
	}
	c.Status(http.StatusOK)
	c.Writer.WriteHeaderNow()
	return nil
}

// copyModel is POST /api/copy: destination becomes another name for source's file.
func (h *handlers) copyModel(c *gin.Context) error {
	var req copyRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	switch {
	case req.Source == "":
		return badRequest("source is required: name the model to copy")
	case req.Destination == "":
		return badRequest("destination is required: name the copy")
	}
	m, err := h.model(c.Request.Context(), req.Source)
	if err != nil {
		return err
	}
	// Ollama's "x" and "x:latest" are one name; the catalog keeps it bare, as /api/tags expects.
	dst := strings.TrimSuffix(req.Destination, latest)
	if err := h.svc.CopyModel(c.Request.Context(), m.ID, dst); err != nil {
		return err
	}
	c.Status(http.StatusOK)
	c.Writer.WriteHeaderNow()
	return nil
}
