package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/superfluid/superfluid/server/core"
)

// Pull states, as Pull.Status says them.
const (
	PullQueued      = "queued"
	PullDownloading = "downloading"
	PullVerifying   = "verifying"
	// PullUploading: an s3 storage's pull, downloaded, is being copied into the bucket.
	PullUploading = "uploading"
	PullDone      = "done"
	PullFailed    = "failed"
)

// Pull is one model pull that POST /api/catalog/pulls started: its progress while it runs, its
// outcome after.
type Pull struct {
	Object  string `json:"object" doc:"always \"catalog.pull\""`
	ID      string `json:"id"`
	Model   string `json:"model" doc:"the reference pulled (hf.co/OWNER/REPO:QUANT)"`
	Storage string `json:"storage" doc:"the storage pulled into; \"\" for the models folder"`
	// Catalog is the catalog id of the pulled model, once done.
	Catalog        string `json:"catalog_id,omitempty" doc:"the catalog id of the model, once done"`
	Status         string `json:"status" enum:"queued,downloading,verifying,uploading,done,failed"`
	CompletedBytes int64  `json:"completed_bytes"`
	TotalBytes     int64  `json:"total_bytes"`
	Error          string `json:"error" doc:"why it failed; \"\" otherwise"`
	StartedAt      int64  `json:"started_at" doc:"Unix seconds"`
	FinishedAt     *int64 `json:"finished_at" doc:"Unix seconds; null while it runs"`
}

// keepFinishedPulls is how many finished pulls the tracker remembers (the newest).
const keepFinishedPulls = 50

// pullRun does one pull: it reports progress through progress and returns the catalog id.
type pullRun func(ctx context.Context, progress func(core.PullProgress)) (string, error)

// pullTracker keeps the pulls that run and the last keepFinishedPulls that finished, in memory:
// a pull is a background job of this process, so a restart forgets them (what they pulled is
// in the catalog).
type pullTracker struct {
	now func() time.Time
	// ctx is what every pull runs under: close cancels it, so no pull outlives the server's
	// manager and store (a pull is detached from the request that asked, not from the process).
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	pulls []*pullState // oldest first
	wg    sync.WaitGroup
}

type pullState struct {
	pull  Pull
	files map[string]core.PullProgress // each file's last progress, by path
	order []string                     // the files in the order they began
}

func newPullTracker(now func() time.Time) *pullTracker {
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &pullTracker{now: now, ctx: ctx, cancel: cancel}
}

// start begins run in the background (detached from the request that asked: a pull outlives
// it) unless the same model is already being pulled into the same storage, in which case that
// pull is the answer.
func (t *pullTracker) start(model, storage string, run pullRun) Pull {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.pulls {
		if p.pull.Model == model && p.pull.Storage == storage && p.pull.FinishedAt == nil {
			return p.pull
		}
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	p := &pullState{files: map[string]core.PullProgress{}, pull: Pull{Object: "catalog.pull", ID: "pull-" + hex.EncodeToString(b),
		Model: model, Storage: storage, Status: PullQueued, StartedAt: t.now().Unix()}}
	t.pulls = append(t.pulls, p)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		id, err := run(t.ctx, func(pp core.PullProgress) { t.progress(p, pp) })
		t.finish(p, id, err)
	}()
	return p.pull
}

func (t *pullTracker) progress(p *pullState, pp core.PullProgress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := pp.Status + ":" + pp.File
	if pp.Status != PullUploading {
		key = "download:" + pp.File
	}
	if _, ok := p.files[key]; !ok {
		p.order = append(p.order, key)
	}
	p.files[key] = pp
	// The bytes shown are the download's, then (for an s3 storage) the upload's.
	var done, total int64
	status := PullDownloading
	verifying := false
	for _, f := range p.order {
		fp := p.files[f]
		if (fp.Status == PullUploading) != (pp.Status == PullUploading) {
			continue
		}
		done, total = done+fp.Completed, total+fp.Total
		verifying = verifying || fp.Status == core.PullVerifying
	}
	switch {
	case pp.Status == PullUploading:
		status = PullUploading
	case verifying && pp.Status != core.PullPulling:
		status = PullVerifying
	}
	p.pull.Status, p.pull.CompletedBytes, p.pull.TotalBytes = status, done, total
}

func (t *pullTracker) finish(p *pullState, catalogID string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := t.now().Unix()
	p.pull.FinishedAt = &at
	if err != nil {
		p.pull.Status, p.pull.Error = PullFailed, err.Error()
	} else {
		p.pull.Status, p.pull.Catalog = PullDone, catalogID
		if p.pull.TotalBytes > 0 {
			p.pull.CompletedBytes = p.pull.TotalBytes
		}
	}
	// Forget the oldest finished pulls past the limit; running ones always stay.
	finished := 0
	for i := len(t.pulls) - 1; i >= 0; i-- {
		if t.pulls[i].pull.FinishedAt == nil {
			continue
		}
		if finished++; finished > keepFinishedPulls {
			t.pulls = slices.Delete(t.pulls, i, i+1)
		}
	}
}

// list is every pull the tracker keeps, newest first.
func (t *pullTracker) list() []Pull {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Pull, 0, len(t.pulls))
	for i := len(t.pulls) - 1; i >= 0; i-- {
		out = append(out, t.pulls[i].pull)
	}
	return out
}

// get is the pull id; false when the tracker has none (never, or forgotten).
func (t *pullTracker) get(id string) (Pull, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.pulls {
		if p.pull.ID == id {
			return p.pull, true
		}
	}
	return Pull{}, false
}

// wait blocks until every pull started so far has finished (tests).
func (t *pullTracker) wait() { t.wg.Wait() }

// close cancels the running pulls and waits for them to end (they finish as failed).
func (t *pullTracker) close() {
	t.cancel()
	t.wg.Wait()
}
