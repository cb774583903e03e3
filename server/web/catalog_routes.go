package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/storage"
)

// CatalogModel is one model of the catalog: what it is, where it is kept, which lanes can load
// it and which serve it now.
type CatalogModel struct {
	Object       string `json:"object" doc:"always \"catalog.model\""`
	ID           string `json:"id" doc:"the name requests use"`
	Name         string `json:"name" doc:"the model file's name, without .gguf"`
	SizeBytes    int64  `json:"size_bytes"`
	Quantization string `json:"quantization" doc:"\"Q4_K_M\", \"F16\", ...; \"\" when unknown"`
	Family       string `json:"family" doc:"the architecture (\"llama\", \"qwen3\", ...)"`
	Parameters   int64  `json:"parameters" doc:"the parameter count; 0 when unknown"`
	Storage      string `json:"storage" doc:"the id of the storage holding it; \"\" for the models folder (or a file elsewhere)"`
	// Lanes are the lanes that can load it: every local lane (the built-in engine loads any
	// catalog model), and an openai or command lane configured with it.
	Lanes    []string `json:"lanes" doc:"ids of the lanes that can load it"`
	LoadedOn []string `json:"loaded_on" doc:"ids of the lanes serving it now"`
	Error    string   `json:"error,omitempty" doc:"why the model cannot be used (file missing or damaged)"`
}

// CatalogList is the catalog.
type CatalogList struct {
	Object string         `json:"object" doc:"always \"list\""`
	Data   []CatalogModel `json:"data"`
}

// PullList is the pulls the server keeps: those running and the last 50 finished, newest first.
type PullList struct {
	Object string `json:"object" doc:"always \"list\""`
	Data   []Pull `json:"data"`
}

// PullRequest is the body of POST /api/catalog/pulls.
type PullRequest struct {
	Model   string `json:"model" required:"true" minLength:"1" maxLength:"512" doc:"what to pull: hf.co/OWNER/REPO:QUANT"`
	Storage string `json:"storage" maxLength:"64" doc:"the id of the storage to pull into; \"\" or left out: the models folder"`
}

// ActionPull is the audit action of a pull started through the web API.
const ActionPull = "catalog.pull"

// registerCatalog adds the catalog routes (when the server has a core).
func registerCatalog(a *API) {
	if a.cfg.Core == nil {
		return
	}
	pulls := newPullTracker(a.cfg.Now)
	a.closers = append(a.closers, pulls.close)
	Handle(a, http.MethodGet, "/api/catalog", Meta{Summary: "The model catalog: sizes, quantizations, where each can load and is loaded", Tag: "catalog", Access: SignedIn},
		func(r *Request[NoBody]) (CatalogList, error) { return a.catalog(r.Ctx) })
	Handle(a, http.MethodGet, "/api/catalog/pulls", Meta{Summary: "The pulls: running and the last 50 finished", Tag: "catalog", Access: SignedIn},
		func(r *Request[NoBody]) (PullList, error) { return PullList{Object: "list", Data: pulls.list()}, nil })
	Handle(a, http.MethodGet, "/api/catalog/pulls/:id", Meta{Summary: "One pull and its progress", Tag: "catalog", Access: SignedIn},
		func(r *Request[NoBody]) (Pull, error) {
			p, ok := pulls.get(r.Param("id"))
			if !ok {
				return Pull{}, Errorf(http.StatusNotFound, "pull_not_found", "", "no pull %q: GET /api/catalog/pulls lists the running ones and the last 50 finished", r.Param("id"))
			}
			return p, nil
		})
	Handle(a, http.MethodPost, "/api/catalog/pulls", Meta{Summary: "Pull a model into the catalog (or into a storage)", Tag: "catalog", Access: Admin, Status: http.StatusAccepted},
		func(r *Request[PullRequest]) (Pull, error) { return a.startPull(r.Ctx, pulls, r.Body) })
}

// catalog lists the core's models with their lanes.
func (a *API) catalog(ctx context.Context) (CatalogList, error) {
	var statuses []lanes.Status
	if a.cfg.Lanes != nil {
		var err error
		if statuses, err = a.cfg.Lanes.List(ctx); err != nil {
			return CatalogList{}, err
		}
	}
	// The model each lane serves, by catalog id (a lane names it as its admin typed it).
	laneModel := make([]string, len(statuses))
	for i, l := range statuses {
		if m, err := a.cfg.Core.Model(l.Model); err == nil {
			laneModel[i] = m.ID
		} else {
			laneModel[i] = l.Model
		}
	}
	var stores []storage.Storage
	if svc := a.storageService(); svc != nil {
		stores, _ = svc.List(ctx) // without them every model is "in the models folder"
	}
	out := []CatalogModel{}
	for _, m := range a.cfg.Core.Models() {
		c := CatalogModel{Object: "catalog.model", ID: m.ID, Name: strings.TrimSuffix(filepath.Base(m.Path), ".gguf"),
			SizeBytes: m.Size, Family: m.Architecture, Lanes: []string{}, LoadedOn: []string{}}
		if e := m.Entry; e != nil {
			if e.IsAlias() {
				continue // another name of a model listed under its own
			}
			c.SizeBytes, c.Quantization, c.Parameters = e.Size, e.Quantization, e.ParameterCount
			if c.Family == "" {
				c.Family = e.Architecture
			}
			if e.Err != nil {
				c.Error = e.Err.Error()
			}
		}
		if c.Name == "." || c.Name == "" {
			c.Name = m.ID
		}
		c.Storage = a.storageOf(stores, m.Path)
		for i, l := range statuses {
			if l.Engine == string(lanes.Local) || laneModel[i] == m.ID {
				c.Lanes = append(c.Lanes, l.ID)
			}
			if laneModel[i] == m.ID && l.State == lanes.Serving {
				c.LoadedOn = append(c.LoadedOn, l.ID)
			}
		}
		out = append(out, c)
	}
	return CatalogList{Object: "list", Data: out}, nil
}

// storageOf is the id of the storage whose folder (or, for s3, whose local copies) holds path.
func (a *API) storageOf(stores []storage.Storage, path string) string {
	if path == "" {
		return ""
	}
	for _, st := range stores {
		dir := st.Path
		if st.Kind == storage.KindS3 {
			if a.cfg.StorageCache == "" {
				continue
			}
			dir = filepath.Join(a.cfg.StorageCache, st.ID)
		}
		if rel, err := filepath.Rel(dir, path); err == nil && filepath.IsLocal(rel) {
			return st.ID
		}
	}
	return ""
}

// storageService is the storage service the routes use (registerStorage made one over the
// store when none was configured); nil when there is none.
func (a *API) storageService() *storage.Service { return a.cfg.Storage }

// startPull checks a pull request and starts it in the background.
func (a *API) startPull(ctx context.Context, pulls *pullTracker, body PullRequest) (Pull, error) {
	ref := strings.TrimSpace(body.Model)
	if err := a.cfg.Core.CheckReference(ref); err != nil {
		return Pull{}, Errorf(http.StatusBadRequest, "invalid_body", "model", "model: %v", err)
	}
	if err := a.cfg.Core.CheckModelsMove("pull again"); err != nil {
		return Pull{}, err // said now, not as a failed pull later (the pull itself checks again)
	}
	dir, upload, err := a.pullTarget(ctx, strings.TrimSpace(body.Storage))
	if err != nil {
		return Pull{}, err
	}
	id, _ := auth.FromContext(ctx)
	actor := people.ActorOf(id)
	actor.Via = "web"
	if a.cfg.People != nil {
		if err := a.cfg.People.Record(ctx, actor, ActionPull, ref, map[string]any{"storage": body.Storage}); err != nil {
			return Pull{}, err
		}
	}
	svc := a.cfg.Core
	return pulls.start(ref, strings.TrimSpace(body.Storage), func(ctx context.Context, progress func(core.PullProgress)) (string, error) {
		// Held through the upload, which reads the model's files: a move must not take them.
		done, err := svc.GuardModels("the download of "+ref, "pull again")
		if err != nil {
			return "", err
		}
		defer done()
		m, err := svc.PullModelInto(ctx, ref, dir, progress)
		if err != nil {
			return "", err
		}
		if upload != nil {
			if err := upload(ctx, dir, m, progress); err != nil {
				return "", err
			}
		}
		return m.ID, nil
	}), nil
}

// uploadFunc copies a pulled model's files from dir into a storage.
type uploadFunc func(ctx context.Context, dir string, m *core.Model, progress func(core.PullProgress)) error

// pullTarget is where a pull into the storage id downloads (a folder; "" for the models
// folder) and, for an s3 storage, how its files then reach the bucket.
func (a *API) pullTarget(ctx context.Context, id string) (string, uploadFunc, error) {
	if id == "" {
		return "", nil, nil
	}
	svc := a.storageService()
	if svc == nil {
		return "", nil, Errorf(http.StatusNotFound, "storage_not_found", "storage", "this server keeps no storages")
	}
	st, err := svc.Get(ctx, id)
	if err != nil {
		return "", nil, Errorf(http.StatusNotFound, "storage_not_found", "storage", "%v: GET /api/admin/storage lists them", err)
	}
	if st.Kind != storage.KindS3 {
		if info, err := os.Stat(st.Path); err != nil || !info.IsDir() {
			return "", nil, Errorf(http.StatusBadRequest, "storage_check_failed", "storage", "the folder %s of storage %s cannot be opened; POST /api/admin/storage/%s/check says why", st.Path, st.Name, st.ID)
		}
		return st.Path, nil, nil
	}
	if a.cfg.StorageCache == "" {
		return "", nil, Errorf(http.StatusBadRequest, "invalid_body", "storage", "this server has no local cache for s3 storages, so it cannot pull into %s", st.Name)
	}
	// An s3 model is downloaded into its local copy (what loads) and then uploaded.
	dir := filepath.Join(a.cfg.StorageCache, st.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	return dir, func(ctx context.Context, dir string, m *core.Model, progress func(core.PullProgress)) error {
		objs, err := svc.Open(ctx, st.ID)
		if err != nil {
			return err
		}
		return uploadModel(ctx, objs, dir, m, progress)
	}, nil
}

// uploadModel puts a pulled model's files (every part of a split model) into objs, named by
// their path under dir.
func uploadModel(ctx context.Context, objs storage.Objects, dir string, m *core.Model, progress func(core.PullProgress)) error {
	parts := []string{m.Path}
	if m.Entry != nil && len(m.Entry.Facts.Parts) > 0 {
		parts = m.Entry.Facts.Parts
	}
	for _, p := range parts {
		name := filepath.Base(p)
		if rel, err := filepath.Rel(dir, p); err == nil && filepath.IsLocal(rel) {
			name = filepath.ToSlash(rel)
		} // else the catalog had the same file elsewhere already (the models folder): its name
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		info, err := f.Stat()
		if err == nil {
			up := &uploadProgress{r: f, p: core.PullProgress{File: name, Status: PullUploading, Total: info.Size()}, emit: progress}
			up.emit(up.p)
			err = objs.Put(ctx, name, up, info.Size())
			up.emit(up.p)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("upload %s: %w", name, err)
		}
	}
	return nil
}

// uploadProgress reports the bytes read from r (on their way to the storage), at most every
// uploadInterval.
type uploadProgress struct {
	r    io.Reader
	p    core.PullProgress
	emit func(core.PullProgress)
	last time.Time
}

const uploadInterval = 100 * time.Millisecond

func (u *uploadProgress) Read(b []byte) (int, error) {
	n, err := u.r.Read(b)
	u.p.Completed += int64(n)
	if now := time.Now(); now.Sub(u.last) >= uploadInterval {
		u.last = now
		u.emit(u.p)
	}
	return n, err
}
