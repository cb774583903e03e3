package websession

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// Attachment is an image or audio file of a user turn. In a chat call it is either ID (a file
// uploaded with POST /web/attachments, which carries files bigger than a frame) or Name, MIME
// and Data inline (base64 in JSON, within MaxFrame); the Session always gets Name, MIME and
// Data.
type Attachment struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	MIME string `json:"mime"`
	Data []byte `json:"data,omitempty"`
}

// Defaults of Config's attachment limits.
const (
	// DefaultMaxAttachment bounds one uploaded file.
	DefaultMaxAttachment = 32 << 20
	// DefaultMaxUploads bounds the uploaded files held at once; past it the least recently
	// used go (a chat naming one is told to attach it again).
	DefaultMaxUploads = 256 << 20
)

// uploads holds the files uploaded for chats, by id, the least recently used dropped first
// once they take more than max bytes.
type uploads struct {
	mu    sync.Mutex
	max   int64
	total int64
	files map[string]*upload
}

type upload struct {
	Attachment
	used time.Time
}

func newUploads(max int64) *uploads { return &uploads{max: max, files: map[string]*upload{}} }

// put keeps a file and returns its id.
func (u *uploads) put(a Attachment) string {
	b := make([]byte, 16)
	rand.Read(b)
	a.ID = hex.EncodeToString(b)
	u.mu.Lock()
	defer u.mu.Unlock()
	for u.total+int64(len(a.Data)) > u.max && len(u.files) > 0 {
		var oldest *upload
		for _, f := range u.files {
			if oldest == nil || f.used.Before(oldest.used) {
				oldest = f
			}
		}
		delete(u.files, oldest.ID)
		u.total -= int64(len(oldest.Data))
	}
	u.files[a.ID] = &upload{Attachment: a, used: time.Now()}
	u.total += int64(len(a.Data))
	return a.ID
}

// get is the file with this id, marked used.
func (u *uploads) get(id string) (Attachment, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	f, ok := u.files[id]
	if !ok {
		return Attachment{}, false
	}
	f.used = time.Now()
	return f.Attachment, true
}

// CodeAttachmentGone is the chat error for an attachment id no longer held (the listener
// restarted, or newer uploads pushed it out): the page uploads the file again and retries.
const CodeAttachmentGone = "attachment_gone"

// resolveAttachments fills each attachment of msgs that names an upload with its file, and
// checks the inline ones.
func (h *Handler) resolveAttachments(msgs []Message) *RPCError {
	for i := range msgs {
		atts := msgs[i].Attachments
		if len(atts) > 0 && msgs[i].Role != "user" {
			return invalidParams("messages[%d]: only a user turn has attachments", i)
		}
		for j, a := range atts {
			where := fmt.Sprintf("messages[%d].attachments[%d]", i, j)
			if a.ID != "" {
				f, ok := h.uploads.get(a.ID)
				if !ok {
					return &RPCError{CodeAttachmentGone, fmt.Sprintf("%s (%s) is no longer held by the server: attach it again", where, a.Name)}
				}
				atts[j] = f
				continue
			}
			if len(a.Data) == 0 {
				return invalidParams("%s needs an id (POST /web/attachments) or data", where)
			}
			if attachmentKind(a.MIME) == "" {
				return invalidParams("%s: %q is not an image or audio type", where, a.MIME)
			}
		}
	}
	return nil
}

// attachmentKind is "image" or "audio" for such a MIME type, else "".
func attachmentKind(mimeType string) string {
	kind, sub, _ := strings.Cut(mimeType, "/")
	if sub == "" || kind != "image" && kind != "audio" {
		return ""
	}
	return kind
}

// serveAttachment is POST /web/attachments?name=NAME: the body is the file itself (its type in
// Content-Type, at most MaxAttachment bytes); the answer is {"id","name","mime","size"}, the id a
// chat's attachment names.
func (h *Handler) serveAttachment(w http.ResponseWriter, r *http.Request) {
	name := path.Base(strings.ReplaceAll(r.URL.Query().Get("name"), "\\", "/"))
	if name == "." || name == "/" {
		name = "attachment"
	}
	typ, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || attachmentKind(typ) == "" {
		writeError(w, &httpError{http.StatusUnsupportedMediaType, "unsupported_attachment",
			fmt.Sprintf("attach an image or audio file (Content-Type image/... or audio/...), not %q", r.Header.Get("Content-Type"))})
		return
	}
	data, err := io.ReadAll(r.Body) // authedUpTo bounds it at MaxAttachment
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeError(w, &httpError{http.StatusRequestEntityTooLarge, "attachment_too_large",
			fmt.Sprintf("%s is over %d MiB, the largest file the playground takes: attach a smaller one", name, h.cfg.MaxAttachment>>20)})
		return
	case err != nil:
		writeError(w, &httpError{http.StatusBadRequest, "invalid_body", "read the file: " + err.Error()})
		return
	case len(data) == 0:
		writeError(w, &httpError{http.StatusBadRequest, "empty_attachment", name + " is empty"})
		return
	}
	id := h.uploads.put(Attachment{Name: name, MIME: typ, Data: data})
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "name": name, "mime": typ, "size": len(data)})
}
