package ollama

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
)

// latest is the tag /api/tags gives every model; a name with it resolves like the bare id.
const latest = ":latest"

// servedModel resolves the model a generation or embedding names: as model does, except that
// in team mode (core.Service.ModelOptional) an empty name is the router's pick, the caller's
// booked lane else a free one (the SlotServe spec's "The model field").
func (h *handlers) servedModel(ctx context.Context, name string) (*core.Model, error) {
	if name == "" && h.svc.ModelOptional() {
		return h.svc.ModelFor(ctx, "")
	}
	return h.model(ctx, name)
}

// model resolves a client's model name, the id or "id:latest", as the request's key sees the
// catalog: a model the key may not use is answered as a missing one, with the same 404 in the
// same words, before anything loads it.
func (h *handlers) model(ctx context.Context, name string) (*core.Model, error) {
	if name == "" {
		return nil, badRequest("model is required")
	}
	m, err := h.svc.ModelFor(ctx, name)
	switch {
	case err == nil:
		return m, nil
	case errors.Is(err, llm.ErrInvalidInput):
		return nil, err
	}
	if base, ok := strings.CutSuffix(name, latest); ok {
		if m, err := h.svc.ModelFor(ctx, base); err == nil {
			return m, nil
		}
	}
	return nil, notFound(name)
}

func (h *handlers) tags(c *gin.Context) error {
	list := []listModel{}
	for _, m := range h.svc.VisibleModels(c.Request.Context()) { // a key limited to some models sees those
		size := m.Size
		if m.Entry != nil && m.Entry.Missing() {
			size = 0 // listed, so that it can be deleted, but it takes no disk space
		}
		name := listName(m)
		list = append(list, listModel{
			Name: name, Model: name, ModifiedAt: m.Created, Size: size, Digest: digest(m), Details: h.details(m),
		})
	}
	// most recently modified first, as Ollama lists them
	slices.SortStableFunc(list, func(a, b listModel) int { return b.ModifiedAt.Compare(a.ModifiedAt) })
	c.JSON(http.StatusOK, gin.H{"models": list})
	return nil
}

// listName is the name /api/tags and /api/ps give a model: Ollama's "name:tag", so the id with
// ":latest" unless the id has a tag of its own (a pull's "hf.co/OWNER/REPO:QUANT").
func listName(m *core.Model) string {
	if strings.Contains(m.ID[strings.LastIndexByte(m.ID, '/')+1:], ":") {
		return m.ID
	}
	return m.ID + latest
}

// ps lists the loaded models. Aliases (/api/copy) share their original's worker, so a loaded
// file is listed once, under its original's name, and the sizes add up to the memory in use.
func (h *handlers) ps(c *gin.Context) error {
	all := slices.Clone(h.svc.VisibleModels(c.Request.Context())) // sorted here; the core's list is not ours to reorder
	slices.SortStableFunc(all, func(a, b *core.Model) int { return cmp.Compare(alias(a), alias(b)) })
	running := []runningModel{}
	seen := map[string]bool{}
	for _, m := range all {
		st := h.svc.ModelStatus(m)
		if st.State != core.ModelLoaded || seen[m.Path] {
			continue
		}
		seen[m.Path] = true
		size := st.Need
		if size == 0 {
			size = m.Size // a fixed-set model has no estimate: its file is the best guess
		}
		name := listName(m)
		running = append(running, runningModel{
			Name: name, Model: name, Size: size, Digest: digest(m), Details: h.details(m),
			ExpiresAt: h.expiresAt(st), ContextLength: m.Info().ContextLength,
		})
	}
	// longest time left first, as Ollama lists them
	slices.SortStableFunc(running, func(a, b runningModel) int { return b.ExpiresAt.Compare(a.ExpiresAt) })
	c.JSON(http.StatusOK, gin.H{"models": running})
	return nil
}

// alias orders originals (0) before aliases (1).
func alias(m *core.Model) int {
	if m.Entry != nil && m.Entry.IsAlias() {
		return 1
	}
	return 0
}

// expiresAt is when a loaded model unloads, as /api/ps shows it. The manager schedules the
// unload only while the model is idle; a busy model shows the default keep-alive from now (what
// follows its requests unless they ask otherwise), and an idle model with none scheduled stays
// loaded: far in the future, as Ollama shows keep_alive -1.
func (h *handlers) expiresAt(st core.ModelStatus) time.Time {
	switch ka := h.svc.KeepAlive(); {
	case !st.ExpiresAt.IsZero():
		return st.ExpiresAt.UTC()
	case st.Inflight > 0 && ka >= 0:
		return time.Now().Add(ka).UTC()
	default:
		return time.Now().Add(time.Duration(math.MaxInt64)).UTC()
	}
}

// details are Ollama's model details: the catalog's facts, read when the model was registered,
// else (a fixed-set model) what the GGUF header says.
func (h *handlers) details(m *core.Model) details {
	e := m.Entry
	if e == nil {
		return h.meta.get(m).details
	}
	d := details{Format: "gguf", Family: cmp.Or(e.Architecture, m.Architecture), QuantizationLevel: e.Quantization}
	if d.Family != "" {
		d.Families = []string{d.Family}
	}
	if e.ParameterCount > 0 {
		d.ParameterSize = humanNumber(uint64(e.ParameterCount))
	}
	return d
}

func (h *handlers) show(c *gin.Context) error {
	var req showRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	name := cmp.Or(req.Model, req.Name)
	m, err := h.model(c.Request.Context(), name)
	if err != nil {
		return err
	}
	meta := h.meta.get(m)
	info := meta.modelInfo(req.Verbose)
	if _, ok := info["general.architecture"]; !ok && m.Architecture != "" {
		info["general.architecture"] = m.Architecture
	}
	ctx := m.Info().ContextLength
	resp := showResponse{
		License:      meta.license,
		Modelfile:    modelfile(m, ctx, auth.Trusted(c.Request)),
		Parameters:   fmt.Sprintf("%-30s %d", "num_ctx", ctx),
		Template:     m.Template.Source(),
		Details:      h.details(m),
		ModelInfo:    info,
		Tensors:      meta.tensors,
		Capabilities: capabilities(m),
		ModifiedAt:   m.Created,
	}
	c.JSON(http.StatusOK, resp)
	return nil
}

// capabilities are Ollama's capability names for m, in Ollama's order: embedding alone for an
// embedding model; otherwise completion; tools when the template renders them (or gets them
// through the prompt, having no tool syntax of its own); insert with FIM markers; vision and
// audio when its projector encodes them; thinking when the template knows reasoning.
func capabilities(m *core.Model) []string {
	if m.Embedding() != nil {
		return []string{"embedding"} // an embedding model does nothing else
	}
	caps := []string{"completion"}
	c := m.Capabilities()
	if c.Tools {
		caps = append(caps, "tools")
	}
	if m.FIM != nil {
		caps = append(caps, "insert")
	}
	vision, audio := m.Modalities()
	if vision {
		caps = append(caps, "vision")
	}
	if audio {
		caps = append(caps, "audio")
	}
	if c.Thinking {
		caps = append(caps, "thinking")
	}
	return caps
}

// modelfile describes the served model as a Modelfile would build it. Its FROM line is the
// file's absolute path only for a caller trusted with it (see auth.Trusted); others get the
// file's base name, which says which file it is without telling where the data lives.
func modelfile(m *core.Model, ctx int, trusted bool) string {
	var b strings.Builder
	from := m.Path
	if !trusted {
		from = filepath.Base(m.Path)
	}
	fmt.Fprintf(&b, "# Modelfile generated by \"ollama show\" (superfluid)\n")
	fmt.Fprintf(&b, "FROM %s\n", from)
	if !m.Template.IsFallback() {
		fmt.Fprintf(&b, "TEMPLATE \"\"\"%s\"\"\"\n", m.Template.Source())
	}
	if ctx > 0 {
		fmt.Fprintf(&b, "PARAMETER num_ctx %d\n", ctx)
	}
	return b.String()
}

// digest is the model's content digest as Ollama lists it (hex, no "sha256:"): the verified
// SHA-256 of a pulled file. A local file's is not known, and hashing gigabytes per listing is too
// slow, so it stands in the SHA-256 of the path, size and modification time, which changes
// whenever the file does.
func digest(m *core.Model) string {
	if m.Entry != nil && m.Entry.SHA256 != "" {
		return m.Entry.SHA256
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", m.Path, m.Size, m.Created.UnixNano()))
	return hex.EncodeToString(sum[:])
}

// statKey is what a cached metadata entry is valid for.
type statKey struct {
	size int64
	mod  time.Time
}

func stat(path string) (statKey, bool) {
	st, err := os.Stat(path)
	if err != nil || st.IsDir() {
		return statKey{}, false
	}
	return statKey{st.Size(), st.ModTime()}, true
}
