package web

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/storage"
)

// StorageObject is a storage on the wire. The secret (an S3 secret key) is write-only: no
// reply carries it; has_password says whether one is stored.
type StorageObject struct {
	Object      string   `json:"object" doc:"always \"storage\""`
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Kind        string   `json:"kind" enum:"local,s3,smb,nfs"`
	Path        string   `json:"path" doc:"local, smb, nfs: the folder (smb and nfs: where the share is mounted)"`
	Endpoint    string   `json:"endpoint" doc:"s3: https://host[:port] or http://host:port"`
	Bucket      string   `json:"bucket"`
	Region      string   `json:"region"`
	Prefix      string   `json:"prefix" doc:"s3: the folder inside the bucket (\"\" for its root)"`
	AccessKey   string   `json:"access_key" doc:"s3: the access key id (\"\" in GET /api/storage, which is not an admin's view)"`
	HasPassword bool     `json:"has_password" doc:"whether a secret key is stored; the secret itself is never returned"`
	Shared      bool     `json:"shared" doc:"every person may use it"`
	People      []string `json:"people" doc:"the ids of the persons who may use it besides (when not shared)"`
	CreatedAt   int64    `json:"created_at" doc:"Unix seconds"`
	UpdatedAt   int64    `json:"updated_at" doc:"Unix seconds"`
}

// StorageList is a list of storages.
type StorageList struct {
	Object string          `json:"object" doc:"always \"list\""`
	Data   []StorageObject `json:"data"`
}

// StorageRequest is the body of POST /api/admin/storage and PUT /api/admin/storage/{id} (a PUT
// replaces every field; its password, when left out, keeps the stored one).
type StorageRequest struct {
	Name      string   `json:"name" required:"true" minLength:"1" maxLength:"64"`
	Kind      string   `json:"kind" required:"true" enum:"local,s3,smb,nfs"`
	Path      string   `json:"path" maxLength:"1024" doc:"local, smb, nfs: the absolute path of the folder (already mounted)"`
	Endpoint  string   `json:"endpoint" maxLength:"1024" doc:"s3: https://host[:port] (http://host:port for a server without TLS)"`
	Bucket    string   `json:"bucket" maxLength:"255"`
	Region    string   `json:"region" maxLength:"64"`
	Prefix    string   `json:"prefix" maxLength:"1024"`
	AccessKey string   `json:"access_key" maxLength:"1024"`
	Password  *string  `json:"password,omitempty" maxLength:"1024" doc:"s3: the secret key, write-only. Left out of a PUT: the stored one stays; \"\": it is removed"`
	Shared    bool     `json:"shared"`
	People    []string `json:"people" maxItems:"1000" doc:"the persons who may use it (ids or names; stored as ids)"`
}

// StorageCheck is the answer of POST /api/admin/storage/{id}/check.
type StorageCheck struct {
	OK bool `json:"ok" doc:"a probe object was written, read back intact and deleted"`
	// Reason says why not (or warns, when ok: an smb or nfs folder that is not a mount point).
	Reason    string `json:"reason"`
	LatencyMS int64  `json:"latency_ms"`
}

// StorageUsage is the answer of GET /api/admin/storage/{id}/usage.
type StorageUsage struct {
	Bytes   int64 `json:"bytes"`
	Objects int64 `json:"objects"`
}

// registerStorage adds the storage routes; without a configured Storage it makes one over the
// store (nil store: no storage routes).
func registerStorage(a *API) {
	if a.cfg.Storage == nil && a.cfg.Store != nil {
		a.cfg.Storage = storage.New(storage.Config{Store: a.cfg.Store, Now: a.cfg.Now})
	}
	svc := a.cfg.Storage
	if svc == nil {
		return
	}
	admin := func(summary string) Meta { return Meta{Summary: summary, Tag: "storage", Access: Admin} }
	Handle(a, http.MethodGet, "/api/storage", Meta{Summary: "The storages the signed-in person may use", Tag: "storage", Access: SignedIn},
		func(r *Request[NoBody]) (StorageList, error) {
			var all []storage.Storage
			var err error
			if r.Caller.Admin() {
				all, err = svc.List(r.Ctx)
			} else {
				all, err = svc.ListFor(r.Ctx, r.Caller.Person.ID)
			}
			if err != nil {
				return StorageList{}, err
			}
			out := make([]StorageObject, 0, len(all))
			for _, st := range all {
				o := storageObject(st)
				if !r.Caller.Admin() {
					o.AccessKey, o.People = "", []string{}
				}
				out = append(out, o)
			}
			return StorageList{Object: "list", Data: out}, nil
		})
	Handle(a, http.MethodGet, "/api/admin/storage", admin("Every storage"),
		func(r *Request[NoBody]) (StorageList, error) {
			all, err := svc.List(r.Ctx)
			if err != nil {
				return StorageList{}, err
			}
			out := make([]StorageObject, 0, len(all))
			for _, st := range all {
				out = append(out, storageObject(st))
			}
			return StorageList{Object: "list", Data: out}, nil
		})
	created := admin("Register a storage")
	created.Status = http.StatusCreated
	Handle(a, http.MethodPost, "/api/admin/storage", created,
		func(r *Request[StorageRequest]) (StorageObject, error) {
			sp, err := a.storageSpec(r.Ctx, r.Body)
			if err != nil {
				return StorageObject{}, err
			}
			st, err := svc.Create(r.Ctx, a.storageBy(r.Ctx), sp)
			if err != nil {
				return StorageObject{}, storageError(err)
			}
			return storageObject(st), nil
		})
	Handle(a, http.MethodPut, "/api/admin/storage/:id", admin("Replace a storage's settings"),
		func(r *Request[StorageRequest]) (StorageObject, error) {
			sp, err := a.storageSpec(r.Ctx, r.Body)
			if err != nil {
				return StorageObject{}, err
			}
			st, err := svc.Update(r.Ctx, a.storageBy(r.Ctx), r.Param("id"), sp)
			if err != nil {
				return StorageObject{}, storageError(err)
			}
			return storageObject(st), nil
		})
	Handle(a, http.MethodDelete, "/api/admin/storage/:id", admin("Unregister a storage (what it holds stays)"),
		func(r *Request[NoBody]) (NoBody, error) {
			_, err := svc.Delete(r.Ctx, a.storageBy(r.Ctx), r.Param("id"))
			return NoBody{}, storageError(err)
		})
	Handle(a, http.MethodPost, "/api/admin/storage/:id/check", admin("Prove read and write access"),
		func(r *Request[NoBody]) (StorageCheck, error) {
			res, err := svc.Check(r.Ctx, r.Param("id"))
			if err != nil {
				return StorageCheck{}, storageError(err)
			}
			return StorageCheck{OK: res.OK, Reason: res.Reason, LatencyMS: res.Latency.Milliseconds()}, nil
		})
	Handle(a, http.MethodGet, "/api/admin/storage/:id/usage", admin("What a storage holds"),
		func(r *Request[NoBody]) (StorageUsage, error) {
			u, err := svc.Usage(r.Ctx, r.Param("id"))
			if errors.Is(err, storage.ErrUnavailable) {
				return StorageUsage{}, Errorf(http.StatusBadGateway, "storage_check_failed", "", "%s", err.Error())
			}
			if err != nil {
				return StorageUsage{}, storageError(err)
			}
			return StorageUsage{Bytes: u.Bytes, Objects: u.Objects}, nil
		})
}

// Storage is the storage service the routes use (nil without a store).
func (a *API) Storage() *storage.Service { return a.cfg.Storage }

// storageSpec is the service's Spec of a request, its people (ids or names) turned into the
// ids of existing persons.
func (a *API) storageSpec(ctx context.Context, b StorageRequest) (storage.Spec, error) {
	ids := make([]string, 0, len(b.People))
	for _, who := range b.People {
		p, err := a.cfg.People.Get(ctx, strings.TrimSpace(who))
		if errors.Is(err, people.ErrNotFound) {
			return storage.Spec{}, Errorf(http.StatusBadRequest, "invalid_body", "people", "people: no person %q (GET /api/admin/users lists them)", who)
		}
		if err != nil {
			return storage.Spec{}, err
		}
		ids = append(ids, p.ID)
	}
	return storage.Spec{Name: b.Name, Kind: b.Kind, Path: b.Path, Endpoint: b.Endpoint, Bucket: b.Bucket, Region: b.Region,
		Prefix: b.Prefix, AccessKey: b.AccessKey, Secret: b.Password, Shared: b.Shared, People: ids}, nil
}

func storageObject(st storage.Storage) StorageObject {
	people := st.People
	if people == nil {
		people = []string{}
	}
	return StorageObject{Object: "storage", ID: st.ID, Name: st.Name, Kind: st.Kind, Path: st.Path, Endpoint: st.Endpoint,
		Bucket: st.Bucket, Region: st.Region, Prefix: st.Prefix, AccessKey: st.AccessKey, HasPassword: st.HasSecret,
		Shared: st.Shared, People: people, CreatedAt: st.CreatedAt.Unix(), UpdatedAt: st.UpdatedAt.Unix()}
}

// storageBy audits a storage write as the request's caller, through the people's audit log.
func (a *API) storageBy(ctx context.Context) storage.By {
	id, _ := auth.FromContext(ctx)
	actor := people.ActorOf(id)
	actor.Via = "web"
	return storage.By{Record: func(ctx context.Context, action, target string, detail map[string]any) error {
		return a.cfg.People.Record(ctx, actor, action, target, detail)
	}}
}

// storageError maps the storage service's errors to the web API's codes.
func storageError(err error) error {
	var fe *storage.FieldError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		return Errorf(http.StatusBadRequest, "invalid_body", fe.Field, "%s", fe.Error())
	case errors.Is(err, storage.ErrNotFound):
		return Errorf(http.StatusNotFound, "storage_not_found", "", "%s", err.Error())
	case errors.Is(err, storage.ErrNameTaken):
		return Errorf(http.StatusConflict, "storage_exists", "name", "%s", err.Error())
	}
	return err
}
