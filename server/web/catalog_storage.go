package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/superfluid/superfluid/server/storage"
)

// FetchCopy brings back a model file pulled into an s3 storage whose local copy (under
// StorageCache/<storage id>/) is gone: it downloads the object from the bucket to path. It is
// the model manager's FetchFunc (models.Manager.SetFetch), so loading such a model fetches it
// first. A path that is no s3 storage's copy is an error wrapping fs.ErrNotExist.
func (a *API) FetchCopy(ctx context.Context, path string) error {
	svc := a.storageService()
	if svc == nil || a.cfg.StorageCache == "" {
		return fmt.Errorf("fetch %s: %w", path, fs.ErrNotExist)
	}
	all, err := svc.List(ctx)
	if err != nil {
		return err
	}
	for _, st := range all {
		if st.Kind != storage.KindS3 {
			continue
		}
		dir := filepath.Join(a.cfg.StorageCache, st.ID)
		rel, err := filepath.Rel(dir, path)
		if err != nil || !filepath.IsLocal(rel) {
			continue
		}
		objs, err := svc.Open(ctx, st.ID)
		if err != nil {
			return err
		}
		return download(ctx, objs, filepath.ToSlash(rel), path)
	}
	return fmt.Errorf("fetch %s: no s3 storage keeps it: %w", path, fs.ErrNotExist)
}

// download copies the object name to path, through a file beside it renamed at the end (a
// load never sees half a model).
func download(ctx context.Context, objs storage.Objects, name, path string) error {
	r, err := objs.Get(ctx, name)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", name, err)
	}
	defer r.Close()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	tmp := path + ".fetch-" + hex.EncodeToString(b)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fetch %s: %w", name, err)
	}
	return nil
}
