package web

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strings"

	"github.com/superfluid/superfluid/server/store"
)

// The admin's backups: an online SQLite backup to download (consistent, taken while serving:
// store.Backup) and a restore that checks the file first (store.Restore: a corrupt, foreign or
// newer-schema file is 400 invalid_backup with the reason, the live database untouched). Both
// are audited.
func (a *API) adminBackupRoutes() {
	Raw(a, http.MethodGet, "/api/admin/backups/download", Meta{Summary: "Download an online backup of the database",
		Tag: "admin backups", Access: Admin, Produces: "application/octet-stream"}, a.adminBackup)
	Raw(a, http.MethodPost, "/api/admin/backups/restore", Meta{Summary: "Restore a backup (the body: the file, or multipart field \"file\"); checked first",
		Tag: "admin backups", Access: Admin, Consumes: "application/octet-stream"}, a.adminRestore)
}

// MaxBackupBytes bounds an uploaded backup.
const MaxBackupBytes = 16 << 30

// AdminRestored is the answer to a restore. Keys are reread within seconds; lanes and other
// state built at start follow the restored rows after a restart.
type AdminRestored struct {
	Restored bool  `json:"restored"`
	Tables   int   `json:"tables"`
	Rows     int64 `json:"rows"`
}

// attachment writes a download: its headers go out with the first byte, so an error before
// any (the backup could not be taken) still gets the web API's JSON error.
type attachment struct {
	w           http.ResponseWriter
	name, ctype string
	started     bool
}

func (d *attachment) Write(p []byte) (int, error) {
	if !d.started {
		d.started = true
		d.w.Header().Set("Content-Type", d.ctype)
		d.w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": d.name}))
		d.w.WriteHeader(http.StatusOK)
	}
	return d.w.Write(p)
}

func (a *API) adminBackup(r *Request[NoBody]) error {
	if a.cfg.Store == nil {
		return unavailable("store")
	}
	name := "superfluid-" + a.cfg.Now().UTC().Format("20060102-150405") + ".db"
	if err := a.cfg.Store.Backup(r.Ctx, &attachment{w: r.Gin.Writer, name: name, ctype: "application/octet-stream"}); err != nil {
		return err
	}
	return a.cfg.People.Record(r.Ctx, actorOf(r), "backup.download", name, nil)
}

func (a *API) adminRestore(r *Request[NoBody]) error {
	if a.cfg.Store == nil {
		return unavailable("store")
	}
	path, err := uploadedBackup(r.Gin.Request)
	if path != "" {
		defer os.Remove(path)
	}
	if err != nil {
		return err
	}
	res, err := a.cfg.Store.Restore(r.Ctx, path)
	if errors.Is(err, store.ErrInvalidBackup) {
		reason := strings.TrimPrefix(err.Error(), "restore: "+store.ErrInvalidBackup.Error()+": ")
		slog.Warn("web: a backup was refused; the database is unchanged", "reason", reason, "by", actorOf(r).PersonName)
		_ = a.cfg.People.Record(r.Ctx, actorOf(r), "backup.restore", "database", map[string]any{"restored": false, "reason": reason})
		return Errorf(http.StatusBadRequest, "invalid_backup", "", "the backup was refused and nothing changed: %s", reason)
	}
	if err != nil {
		return err
	}
	a.loadDefaultQoS() // the settings came back with the rest
	slog.Info("web: the database was restored from a backup", "tables", res.Tables, "rows", res.Rows, "by", actorOf(r).PersonName)
	if err := a.cfg.People.Record(r.Ctx, actorOf(r), "backup.restore", "database", map[string]any{"restored": true, "tables": res.Tables, "rows": res.Rows}); err != nil {
		return err
	}
	r.Gin.JSON(http.StatusOK, AdminRestored{Restored: true, Tables: res.Tables, Rows: res.Rows})
	return nil
}

// uploadedBackup saves the request's backup (the raw body, or the multipart field "file") in a
// temporary file and returns its path ("" when none was made).
func uploadedBackup(req *http.Request) (string, error) {
	req.Body = http.MaxBytesReader(nil, req.Body, MaxBackupBytes)
	var src io.Reader = req.Body
	if mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); mt == "multipart/form-data" {
		mr, err := req.MultipartReader()
		if err != nil {
			return "", Errorf(http.StatusBadRequest, "invalid_backup", "file", "the multipart body cannot be read: %v", err)
		}
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				return "", Errorf(http.StatusBadRequest, "invalid_backup", "file", "the multipart body has no field \"file\"")
			}
			if err != nil {
				return "", Errorf(http.StatusBadRequest, "invalid_backup", "file", "the multipart body cannot be read: %v", err)
			}
			if part.FormName() == "file" {
				src = part
				break
			}
		}
	}
	f, err := os.CreateTemp("", "superfluid-upload-*.db")
	if err != nil {
		return "", fmt.Errorf("save the uploaded backup: %w", err)
	}
	n, err := io.Copy(f, src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return f.Name(), Errorf(http.StatusRequestEntityTooLarge, "body_too_large", "", "a backup is at most %d GiB", MaxBackupBytes>>30)
		}
		return f.Name(), Errorf(http.StatusBadRequest, "invalid_backup", "", "the upload did not arrive whole: %v", err)
	}
	if n == 0 {
		return f.Name(), Errorf(http.StatusBadRequest, "invalid_backup", "", "the body is empty: send the backup file")
	}
	return f.Name(), nil
}
