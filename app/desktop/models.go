package desktop

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/tray"
)

func (c *Controller) Models() []tray.Model {
	entries := c.mgr.Catalog().List()
	// What a model sees and hears is the core's view (its projector's metadata, known before a
	// load), or the loaded engine's.
	senses := map[string]*core.Model{}
	for _, m := range c.svc.Models() {
		senses[m.ID] = m
	}
	out := make([]tray.Model, 0, len(entries))
	for _, e := range entries {
		st := c.mgr.Status(e)
		info := c.mgr.Engine(e).Info()
		m := tray.Model{ID: e.ID, Quantization: e.Quantization, Source: e.Source, Size: e.Size,
			Context: info.ContextLength, Runtime: info.Runtime, State: st.State, Need: st.Need,
			Vision: info.Vision, Audio: info.Audio}
		if cm := senses[e.ID]; cm != nil {
			m.Vision, m.Audio = m.Vision || cm.Vision, m.Audio || cm.Audio
		}
		if st.Err != nil {
			m.Err = st.Err.Error()
		}
		out = append(out, m)
	}
	return out
}

// Load loads a model through the core, as POST /v1/models/load does.
func (c *Controller) Load(id string) error {
	_, err := c.svc.LoadModel(context.Background(), id)
	return err
}

// Unload unloads a model through the core, after its requests in flight.
func (c *Controller) Unload(id string) error {
	_, err := c.svc.UnloadModel(context.Background(), id)
	return err
}

func (c *Controller) Delete(id string) error {
	_, err := c.svc.DeleteModel(context.Background(), id)
	c.publish(tray.Event{Kind: tray.EventModels})
	return err
}

// Settings returns a model's own settings in the dialog's terms.
func (c *Controller) Settings(id string) (tray.ModelSettings, error) {
	e, err := c.mgr.Catalog().Lookup(id)
	if err != nil {
		return tray.ModelSettings{}, err
	}
	set, err := c.svc.ModelSettings(context.Background(), e.ID)
	out := tray.ModelSettings{ContextLength: set.ContextLength, Lanes: set.Lanes, Runtime: set.Runtime,
		MaxTokens: set.MaxTokens, SystemPrompt: set.SystemPrompt,
		Speculative: set.Speculative, DraftModel: set.DraftModel, DraftTokens: set.DraftTokens, FlashAttention: set.FlashAttention,
		DefaultContext: c.defaultContext(e), TrainContext: e.Facts.ContextLength}
	if set.KeepAlive != nil {
		out.KeepAlive = keepAliveText(*set.KeepAlive)
	}
	out.Temperature, out.TopP = floatText(set.Temperature), floatText(set.TopP)
	if set.TopK != nil {
		out.TopK = strconv.Itoa(*set.TopK)
	}
	return out, err
}

// defaultContext is the window e loads with when its settings name none: the manager's rule
// (--ctx, else the model's own window at most 4096).
func (c *Controller) defaultContext(e *models.Entry) int {
	switch {
	case c.mgr.Config().ContextLength > 0:
		return c.mgr.Config().ContextLength
	case e.Facts.ContextLength > 0:
		return min(e.Facts.ContextLength, 4096)
	}
	return 4096
}

// SetSettings parses and stores a model's settings; the core validates the runtime.
func (c *Controller) SetSettings(id string, s tray.ModelSettings) error {
	set := store.ModelSettings{ModelID: id, ContextLength: s.ContextLength, Lanes: s.Lanes, Runtime: s.Runtime,
		MaxTokens: s.MaxTokens, SystemPrompt: s.SystemPrompt,
		Speculative: s.Speculative, DraftModel: s.DraftModel, DraftTokens: s.DraftTokens, FlashAttention: s.FlashAttention}
	if set.Runtime == backends.CPU {
		set.Runtime = ""
	}
	var err error
	if s.KeepAlive != "" {
		if set.KeepAlive, err = models.ParseKeepAlive(strconv.AppendQuote(nil, s.KeepAlive)); err != nil {
			return fmt.Errorf("keep loaded for: %w", err)
		}
	}
	parse := func(name, text string, lo, hi float64) (*float64, error) {
		if text == "" {
			return nil, nil
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || f < lo || f > hi {
			return nil, fmt.Errorf("%s must be a number from %g to %g", name, lo, hi)
		}
		return &f, nil
	}
	if set.Temperature, err = parse("temperature", s.Temperature, 0, 2); err != nil {
		return err
	}
	if set.TopP, err = parse("top P", s.TopP, 0, 1); err != nil {
		return err
	}
	if s.TopK != "" {
		k, err := strconv.Atoi(s.TopK)
		if err != nil || k < 0 {
			return fmt.Errorf("top K must be a whole number, 0 or more")
		}
		set.TopK = &k
	}
	err = c.svc.SetModelSettings(context.Background(), set)
	c.publish(tray.Event{Kind: tray.EventModels})
	return err
}

// Runtimes names the runtimes that can run here.
func (c *Controller) Runtimes() []string {
	var out []string
	for _, r := range c.d.Runtimes() {
		if r.Usable {
			out = append(out, r.Name)
		}
	}
	return out
}

// Memory estimates the model's RAM with a window and lanes (0: its current ones) and what the
// budget has free besides the model itself.
func (c *Controller) Memory(id string, ctx, lanes int) (need, free int64) {
	e, err := c.mgr.Catalog().Lookup(id)
	if err != nil {
		return 0, 0
	}
	info := c.mgr.Engine(e).Info()
	if ctx <= 0 {
		ctx = info.ContextLength
	}
	if lanes <= 0 {
		lanes = info.Parallel
	}
	need = models.Estimate(e.Facts, ctx, lanes)
	budget, used := c.mgr.Budget()
	if st := c.mgr.Status(e); st.State != models.StateUnloaded {
		used -= st.Need
	}
	return need, min(budget-used, models.AvailableMemory())
}

func keepAliveText(d time.Duration) string {
	if d < 0 {
		return "-1"
	}
	return d.String()
}

func floatText(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'g', -1, 64)
}
