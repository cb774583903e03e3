package soak

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"time"
)

// records are what the server acknowledged and must keep: uploaded files (until deleted),
// stored responses, batches (every line answered), and request records (GET /v1/usage).
type records struct {
	mu        sync.Mutex
	files     map[string]fileRecord // live uploads by id
	responses []storedResponse      // the latest stored responses
	batches   map[string]*batchRecord
	lostOnes  []string // acknowledged records that were lost or changed

	// Batch lines by endpoint: created, and answered with a 2xx or not, in ended batches.
	linesCreated, linesOK, linesFailed map[string]int
	batchesDone                        int
}

type fileRecord struct {
	sum  [32]byte
	size int
	at   time.Time // when the upload was acknowledged
}

type storedResponse struct {
	id   string
	body []byte
}

type batchRecord struct {
	id, endpoint string
	ids          []string // custom ids of its lines
	created      time.Time
}

func newRecords() *records {
	return &records{files: map[string]fileRecord{}, batches: map[string]*batchRecord{},
		linesCreated: map[string]int{}, linesOK: map[string]int{}, linesFailed: map[string]int{}}
}

func (rc *records) lost(format string, args ...any) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.lostOnes = append(rc.lostOnes, fmt.Sprintf(format, args...))
}

func (rc *records) lostList() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.lostOnes...)
}

const keptResponses = 200

func (rc *records) storeResponse(id string, body []byte) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.responses = append(rc.responses, storedResponse{id, append([]byte(nil), body...)})
	if len(rc.responses) > keptResponses {
		rc.responses = rc.responses[1:]
	}
}

func (rc *records) someResponse() (string, []byte, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.responses) == 0 {
		return "", nil, false
	}
	r := rc.responses[len(rc.responses)-1-int(time.Now().UnixNano()%int64(len(rc.responses)))]
	return r.id, r.body, true
}

type fileObject struct {
	ID      *string `json:"id"`
	Object  *string `json:"object"`
	Bytes   *int    `json:"bytes"`
	Purpose *string `json:"purpose"`
}

// upload is POST /v1/files of content (multipart).
func (s *soak) upload(ctx context.Context, name, purpose string, content []byte) (string, outcome) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("purpose", purpose)
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write(content)
	mw.Close()
	hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/files", &buf)
	hr.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := s.http.Do(hr)
	if err != nil {
		return "", broken(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return "", broken(err)
	}
	if res.StatusCode != http.StatusOK {
		return "", errorReply(openAI, res.StatusCode, body)
	}
	var f fileObject
	if err := strictJSON(body, &f); err != nil || f.ID == nil || !strings.HasPrefix(*f.ID, "file-") || f.Object == nil || *f.Object != "file" ||
		f.Bytes == nil || *f.Bytes != len(content) || f.Purpose == nil || *f.Purpose != purpose {
		return "", malformed("file object %v: %s", err, clip(body))
	}
	return *f.ID, outcome{status: http.StatusOK}
}

// fileUpload uploads 1 to 32 KiB of random bytes and remembers their digest.
func (s *soak) fileUpload(ctx context.Context, r *req) outcome {
	content := make([]byte, 1+r.rnd.IntN(32<<10))
	for i := range content {
		content[i] = byte(r.rnd.Uint32())
	}
	id, o := s.upload(ctx, "soak.bin", "user_data", content)
	if id != "" {
		s.records.mu.Lock()
		s.records.files[id] = fileRecord{sum: sha256.Sum256(content), size: len(content), at: time.Now()}
		s.records.mu.Unlock()
	}
	return o
}

// someFile picks a live upload (ok false when there is none); take removes it from the live
// set (it is about to be deleted).
func (rc *records) someFile(take bool) (string, fileRecord, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for id, f := range rc.files { // map order is random enough
		if take {
			delete(rc.files, id)
		}
		return id, f, true
	}
	return "", fileRecord{}, false
}

func (rc *records) isLive(id string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	_, ok := rc.files[id]
	return ok
}

// fileDownload reads a live upload back: the same bytes.
func (s *soak) fileDownload(ctx context.Context, _ *req) outcome {
	id, f, ok := s.records.someFile(false)
	if !ok {
		return outcome{status: http.StatusOK}
	}
	return s.checkFile(ctx, id, f)
}

func (s *soak) checkFile(ctx context.Context, id string, f fileRecord) outcome {
	c, err := do(ctx, s.http, http.MethodGet, s.url+"/v1/files/"+id+"/content", nil, false)
	if err != nil {
		return broken(err)
	}
	if c.res.StatusCode == http.StatusNotFound && !s.records.isLive(id) {
		return outcome{status: http.StatusOK} // deleted meanwhile
	}
	if c.res.StatusCode != http.StatusOK {
		if c.res.StatusCode == http.StatusNotFound {
			s.records.lost("file %s (%d bytes, uploaded %s) is gone: %s", id, f.size, f.at.Format(time.TimeOnly), clip(c.body))
		}
		return errorReply(openAI, c.res.StatusCode, c.body)
	}
	if sha256.Sum256(c.body) != f.sum {
		s.records.lost("file %s reads back %d bytes that differ from the %d uploaded", id, len(c.body), f.size)
	}
	return outcome{status: http.StatusOK}
}

// fileList lists the files: every upload acknowledged before the list and not deleted since
// is in it, with its size.
func (s *soak) fileList(ctx context.Context, _ *req) outcome {
	s.records.mu.Lock()
	before := make(map[string]fileRecord, len(s.records.files))
	for id, f := range s.records.files {
		before[id] = f
	}
	s.records.mu.Unlock()
	c, refused, ok := s.send(ctx, openAI, http.MethodGet, "/v1/files?limit=10000", nil, false)
	if !ok {
		return refused
	}
	var l struct {
		Object  *string      `json:"object"`
		Data    []fileObject `json:"data"`
		HasMore *bool        `json:"has_more"`
	}
	if err := strictJSON(c.body, &l); err != nil || l.Object == nil || *l.Object != "list" || l.HasMore == nil {
		return malformed("file list %v: %s", err, clip(c.body))
	}
	listed := map[string]int{}
	for _, f := range l.Data {
		if f.ID == nil || f.Bytes == nil {
			return malformed("a listed file without id or bytes: %s", clip(c.body))
		}
		listed[*f.ID] = *f.Bytes
	}
	for id, f := range before {
		size, ok := listed[id]
		switch {
		case !ok && s.records.isLive(id) && !*l.HasMore:
			s.records.lost("file %s (uploaded %s) is missing from GET /v1/files", id, f.at.Format(time.TimeOnly))
		case ok && size != f.size:
			s.records.lost("file %s is listed with %d bytes, uploaded %d", id, size, f.size)
		}
	}
	return outcome{status: http.StatusOK}
}

// fileDelete deletes a live upload; afterwards it is gone.
func (s *soak) fileDelete(ctx context.Context, _ *req) outcome {
	id, _, ok := s.records.someFile(true)
	if !ok {
		return outcome{status: http.StatusOK}
	}
	return s.deleteFile(ctx, id)
}

func (s *soak) deleteFile(ctx context.Context, id string) outcome {
	c, refused, ok := s.send(ctx, openAI, http.MethodDelete, "/v1/files/"+id, nil, false)
	if !ok {
		return refused
	}
	var d struct {
		ID      *string `json:"id"`
		Deleted *bool   `json:"deleted"`
	}
	if err := strictJSON(c.body, &d); err != nil || d.ID == nil || *d.ID != id || d.Deleted == nil || !*d.Deleted {
		return malformed("delete file: %v: %s", err, clip(c.body))
	}
	g, err := do(ctx, s.http, http.MethodGet, s.url+"/v1/files/"+id, nil, false)
	if err != nil {
		return broken(err)
	}
	if g.res.StatusCode != http.StatusNotFound {
		return malformed("GET of deleted file %s: status %d: %s", id, g.res.StatusCode, clip(g.body))
	}
	if o := errorReply(openAI, g.res.StatusCode, g.body); o.malformed != "" {
		return o
	}
	return outcome{status: http.StatusOK}
}

type batchObject struct {
	ID            *string `json:"id"`
	Object        *string `json:"object"`
	Status        *string `json:"status"`
	OutputFileID  *string `json:"output_file_id"`
	ErrorFileID   *string `json:"error_file_id"`
	RequestCounts *struct {
		Total     int `json:"total"`
		Completed int `json:"completed"`
		Failed    int `json:"failed"`
	} `json:"request_counts"`
}

// batchCreate uploads a JSONL of 2 to 4 lines (chat completions on the story model, or
// embeddings on the BERT) and creates a batch of it.
func (s *soak) batchCreate(ctx context.Context, r *req) outcome {
	endpoint := "/v1/chat/completions"
	if r.rnd.IntN(3) == 0 {
		endpoint = "/v1/embeddings"
	}
	b := &batchRecord{endpoint: endpoint, created: time.Now()}
	var in bytes.Buffer
	for i := range 2 + r.rnd.IntN(3) {
		id := fmt.Sprintf("line-%d-%d", time.Now().UnixNano(), i)
		b.ids = append(b.ids, id)
		body := map[string]any{"model": s.model, "max_tokens": 8 + r.rnd.IntN(17), "messages": []map[string]string{{"role": "user", "content": r.prompt()}}}
		if endpoint == "/v1/embeddings" {
			body = map[string]any{"model": s.embedModel, "input": r.prompt()}
		}
		line, _ := json.Marshal(map[string]any{"custom_id": id, "method": "POST", "url": endpoint, "body": body})
		in.Write(append(line, '\n'))
	}
	fileID, o := s.upload(ctx, "batch.jsonl", "batch", in.Bytes())
	if fileID == "" {
		return o
	}
	c, refused, ok := s.send(ctx, openAI, http.MethodPost, "/v1/batches", map[string]any{"input_file_id": fileID, "endpoint": endpoint, "completion_window": "24h"}, false)
	if !ok {
		return refused
	}
	var bo batchObject
	if err := strictJSON(c.body, &bo); err != nil || bo.ID == nil || bo.Object == nil || *bo.Object != "batch" || bo.Status == nil {
		return malformed("batch object %v: %s", err, clip(c.body))
	}
	b.id = *bo.ID
	s.records.mu.Lock()
	s.records.batches[b.id] = b
	s.records.linesCreated[endpoint] += len(b.ids)
	s.records.mu.Unlock()
	return outcome{status: http.StatusOK}
}

// batchPoll reads one pending batch; a finished one is checked line by line.
func (s *soak) batchPoll(ctx context.Context, _ *req) outcome {
	s.records.mu.Lock()
	var b *batchRecord
	for _, x := range s.records.batches {
		b = x
		break
	}
	s.records.mu.Unlock()
	if b == nil {
		return outcome{status: http.StatusOK}
	}
	o, _ := s.checkBatch(ctx, b)
	return o
}

// checkBatch reads batch b and, when it has ended, its output and error files: every line
// answered exactly once, by a reply of its endpoint's shape. A line failed (error file) counts
// as expected only when chaos overlapped the batch. It reports whether the batch ended.
func (s *soak) checkBatch(ctx context.Context, b *batchRecord) (outcome, bool) {
	c, err := do(ctx, s.http, http.MethodGet, s.url+"/v1/batches/"+b.id, nil, false)
	if err != nil {
		return broken(err), false
	}
	if c.res.StatusCode == http.StatusNotFound {
		s.records.lost("batch %s (created %s) is gone: %s", b.id, b.created.Format(time.TimeOnly), clip(c.body))
		s.forgetBatch(b)
		return errorReply(openAI, c.res.StatusCode, c.body), true
	}
	if c.res.StatusCode != http.StatusOK {
		return errorReply(openAI, c.res.StatusCode, c.body), false
	}
	var bo batchObject
	if err := strictJSON(c.body, &bo); err != nil || bo.Status == nil || bo.RequestCounts == nil {
		return malformed("batch object %v: %s", err, clip(c.body)), false
	}
	switch *bo.Status {
	case "validating", "in_progress", "finalizing":
		return outcome{status: http.StatusOK}, false
	case "completed":
	default:
		s.forgetBatch(b)
		return outcome{status: http.StatusOK, from: b.created, failure: fmt.Sprintf("batch %s ended %s: %s", b.id, *bo.Status, clip(c.body))}, true
	}
	s.forgetBatch(b)
	rc := bo.RequestCounts
	if rc.Total != len(b.ids) || rc.Completed+rc.Failed != rc.Total {
		s.records.lost("batch %s of %d lines completed with counts %+v", b.id, len(b.ids), *rc)
	}
	seen := map[string]int{}
	failed := 0
	for i, fid := range []*string{bo.OutputFileID, bo.ErrorFileID} {
		if fid == nil || *fid == "" {
			continue
		}
		f, err := do(ctx, s.http, http.MethodGet, s.url+"/v1/files/"+*fid+"/content", nil, false)
		if err != nil {
			return broken(err), true
		}
		if f.res.StatusCode != http.StatusOK {
			s.records.lost("batch %s: its %s file %s does not read: status %d", b.id, []string{"output", "error"}[i], *fid, f.res.StatusCode)
			continue
		}
		for _, line := range bytes.Split(bytes.TrimSpace(f.body), []byte("\n")) {
			var l struct {
				CustomID *string `json:"custom_id"`
				Response *struct {
					StatusCode int             `json:"status_code"`
					Body       json.RawMessage `json:"body"`
				} `json:"response"`
				Error *json.RawMessage `json:"error"`
			}
			if err := strictJSON(line, &l); err != nil || l.CustomID == nil || (l.Response == nil) == (l.Error == nil || string(*l.Error) == "null") {
				return malformed("batch %s: result line %v: %s", b.id, err, clip(line)), true
			}
			seen[*l.CustomID]++
			if l.Response == nil || l.Response.StatusCode != http.StatusOK {
				failed++
				continue
			}
			if err := checkLine(b.endpoint, l.Response.Body); err != nil {
				return malformed("batch %s line %s: %v: %s", b.id, *l.CustomID, err, clip(l.Response.Body)), true
			}
		}
	}
	for _, id := range b.ids {
		if seen[id] != 1 {
			s.records.lost("batch %s: line %s answered %d times", b.id, id, seen[id])
		}
	}
	if len(seen) != len(b.ids) {
		s.records.lost("batch %s: %d distinct results for %d lines", b.id, len(seen), len(b.ids))
	}
	s.records.mu.Lock()
	s.records.batchesDone++
	s.records.linesOK[b.endpoint] += len(b.ids) - failed
	s.records.linesFailed[b.endpoint] += failed
	s.records.mu.Unlock()
	o := outcome{status: http.StatusOK, from: b.created}
	if failed > 0 {
		o.failure = fmt.Sprintf("batch %s: %d of %d lines failed", b.id, failed, len(b.ids))
	}
	return o, true
}

func (s *soak) forgetBatch(b *batchRecord) {
	s.records.mu.Lock()
	delete(s.records.batches, b.id)
	s.records.mu.Unlock()
}

// checkLine checks a batch line's reply body.
func checkLine(endpoint string, body []byte) error {
	if endpoint == "/v1/embeddings" {
		var e embeddingList
		if err := strictJSON(body, &e); err != nil {
			return err
		}
		return checkEmbeddings(&e, 1)
	}
	var cc chatCompletion
	if err := strictJSON(body, &cc); err != nil {
		return err
	}
	return checkChat(&cc, 24, false)
}

// usageByModel reads GET /v1/usage?group_by=model: requests recorded per model.
func (s *soak) usageByModel(ctx context.Context) (map[string]int64, error) {
	c, err := do(ctx, s.http, http.MethodGet, s.url+"/v1/usage?group_by=model", nil, false)
	if err != nil {
		return nil, err
	}
	if c.res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/usage: status %d: %s", c.res.StatusCode, clip(c.body))
	}
	var u struct {
		Data []struct {
			Model    *string `json:"model"`
			Requests *int64  `json:"requests"`
		} `json:"data"`
	}
	if err := strictJSON(c.body, &u); err != nil {
		return nil, fmt.Errorf("GET /v1/usage: %v: %s", err, clip(c.body))
	}
	out := map[string]int64{}
	for _, d := range u.Data {
		if d.Model == nil || d.Requests == nil {
			return nil, fmt.Errorf("GET /v1/usage: a row without model or requests: %s", clip(c.body))
		}
		out[*d.Model] += *d.Requests
	}
	return out, nil
}
