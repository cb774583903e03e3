package openai

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
)

// LoRA adapters (llama-server's routes, per model): POST /v1/lora/load and /v1/lora/unload
// (admin), GET /v1/lora (?model=). The registry is the core's (core/lora.go); requests pick
// adapters with the `lora` extension.

func (h *handlers) routesLoRA(r gin.IRouter) {
	r.POST("/v1/lora/load", Handle(h.loadLoRA))
	r.POST("/v1/lora/unload", Handle(h.unloadLoRA))
	r.GET("/v1/lora", Handle(h.listLoRA))
}

// loraEntry is one adapter in the routes' replies. Path is shown to admin callers only: it is
// where the adapter lies on this machine.
type loraEntry struct {
	Object string  `json:"object"`
	ID     string  `json:"id"`
	Path   string  `json:"path,omitempty"`
	Scale  float64 `json:"scale"`
	Active bool    `json:"active"`
	Model  string  `json:"model"`
}

func toLoRAEntries(c *gin.Context, list []core.Adapter) []loraEntry {
	admin, _ := auth.Admin(c.Request)
	out := make([]loraEntry, 0, len(list))
	for _, a := range list {
		e := loraEntry{Object: "lora_adapter", ID: a.ID, Scale: a.Scale, Active: a.Active, Model: a.Model}
		if admin {
			e.Path = a.Path
		}
		out = append(out, e)
	}
	return out
}

type loraList struct {
	Object string      `json:"object"`
	Data   []loraEntry `json:"data"`
}

// loraLoadRequest is the body of /v1/lora/load.
type loraLoadRequest struct {
	Model *string `json:"model"`
	// Adapter is the absolute path of a LoRA GGUF on this machine, or a catalog adapter's id.
	Adapter *string `json:"adapter"`
	// ID names it (default: the catalog id, else the file's base name).
	ID    string   `json:"id"`
	Scale *float64 `json:"scale"`
}

func (h *handlers) loadLoRA(c *gin.Context) error {
	if err := adminOnly(c); err != nil {
		return err
	}
	var req loraLoadRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	if req.Model == nil || *req.Model == "" {
		return invalid("model", "you must provide a model parameter: the model the adapter applies to")
	}
	if req.Adapter == nil || *req.Adapter == "" {
		return invalid("adapter", "you must provide an adapter parameter: the absolute path of a LoRA GGUF file on this machine, or a catalog adapter's id")
	}
	scale := 1.0
	if req.Scale != nil {
		scale = *req.Scale
	}
	if scale < -core.MaxAdapterScale || scale > core.MaxAdapterScale {
		return invalid("scale", fmt.Sprintf("scale is %v; an adapter's scale is a number from -%d to %d (1 as trained, 0 off)", scale, core.MaxAdapterScale, core.MaxAdapterScale))
	}
	a, err := h.svc.LoadAdapter(c.Request.Context(), *req.Model, *req.Adapter, req.ID, scale)
	if err != nil {
		return loraError(err, "adapter")
	}
	c.JSON(http.StatusOK, toLoRAEntries(c, []core.Adapter{a})[0])
	return nil
}

// loraUnloadRequest is the body of /v1/lora/unload; no id unloads every adapter of the model.
type loraUnloadRequest struct {
	Model *string `json:"model"`
	ID    string  `json:"id"`
}

func (h *handlers) unloadLoRA(c *gin.Context) error {
	if err := adminOnly(c); err != nil {
		return err
	}
	var req loraUnloadRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	if req.Model == nil || *req.Model == "" {
		return invalid("model", "you must provide a model parameter: the model whose adapter to unload")
	}
	gone, err := h.svc.UnloadAdapter(c.Request.Context(), *req.Model, req.ID)
	if err != nil {
		return loraError(err, "id")
	}
	c.JSON(http.StatusOK, loraList{Object: "list", Data: toLoRAEntries(c, gone)})
	return nil
}

// listLoRA lists a model's adapters (?model=), or every model's loaded ones.
func (h *handlers) listLoRA(c *gin.Context) error {
	list, err := h.svc.Adapters(c.Request.Context(), c.Query("model"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, loraList{Object: "list", Data: toLoRAEntries(c, list)})
	return nil
}

// loraError names the parameter at fault in a refusal of the core's registry.
func loraError(err error, param string) error {
	if errors.Is(err, llm.ErrInvalidInput) && !errors.Is(err, llm.ErrModelNotFound) {
		return invalid(param, err.Error())
	}
	return err
}
