package desktop

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/superfluid/superfluid/tray"
)

// Settings the first run keeps in the store's app settings (as start_hidden is).
const (
	// settingWelcomed is "true" once the welcome was dismissed with Don't show again.
	settingWelcomed = "welcomed"
	// SettingModelsDir is the models folder the user moved the models to; the app's config
	// reads it at start (a --models-dir flag still wins).
	SettingModelsDir = "models_dir"
)

// FirstRun reports whether the welcome has not been dismissed yet.
func (c *Controller) FirstRun() bool {
	v, err := c.d.Store.AppSetting(context.Background(), settingWelcomed)
	return err == nil && v != "true"
}

func (c *Controller) SetWelcomed() error {
	return c.d.Store.SetAppSetting(context.Background(), settingWelcomed, "true")
}

// ModelsDir is the catalog's models folder.
func (c *Controller) ModelsDir() string { return c.mgr.Catalog().Dir() }

// HubQuant is one quantization of a Hub repository with the memory it needs here, as the
// Discover tab's search sizes it.
type HubQuant struct {
	Quant, Reference string
	Size, Need, Free int64
	// Fits reports whether it fits the free memory; Best whether it is the one to preselect.
	Fits, Best bool
}

// HubQuants sizes a repository's quantizations for a window of ctxLen tokens in lanes lanes
// (the Discover tab's search does it; Deps.Quants is that seam).
type HubQuants interface {
	HubQuants(ctx context.Context, repo string, ctxLen, lanes int) ([]HubQuant, error)
}

// starter is one model of the suggestion's list.
type starter struct{ name, repo string }

// starters are small, well-known instruction models with GGUF repositories on the Hub that
// load on modest machines, smallest first: the suggestion is the largest of them that fits
// with room to spare. The repositories are the quantizers most people pull from (unsloth,
// bartowski), which ship every common quantization.
var starters = []starter{
	{"Qwen3 0.6B", "unsloth/Qwen3-0.6B-GGUF"},
	{"Gemma 3 1B", "unsloth/gemma-3-1b-it-GGUF"},
	{"Llama 3.2 1B", "bartowski/Llama-3.2-1B-Instruct-GGUF"},
	{"Qwen3 1.7B", "unsloth/Qwen3-1.7B-GGUF"},
	{"Llama 3.2 3B", "bartowski/Llama-3.2-3B-Instruct-GGUF"},
	{"Qwen3 4B", "unsloth/Qwen3-4B-GGUF"},
}

// The suggestion sizes each model for one chat with a 4096-token window.
const (
	suggestContext = 4096
	suggestLanes   = 1
)

// roomy reports whether q fits with a quarter of the free memory left over (for the system,
// the apps, a longer chat).
func roomy(q HubQuant) bool { return q.Fits && q.Need > 0 && q.Need <= q.Free/4*3 }

// Suggestion is the largest starter with a quantization that fits with room to spare: the
// one the Hub search preselects when it is roomy, else its largest roomy one. Offline (no
// repository answered) it says so and suggests nothing.
func (c *Controller) Suggestion(ctx context.Context) (tray.Suggestion, error) {
	sizer := c.quantSizer()
	if sizer == nil {
		return tray.Suggestion{Note: "No Hub search in this build: download a model by reference on the Models tab."}, nil
	}
	var (
		best    tray.Suggestion
		lastErr error
		answers int
		free    int64
	)
	for _, s := range starters {
		quants, err := sizer.HubQuants(ctx, s.repo, suggestContext, suggestLanes)
		if err != nil {
			lastErr = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		answers++
		pick := pickQuant(quants)
		for _, q := range quants {
			free = max(free, q.Free)
		}
		if pick != nil {
			best = tray.Suggestion{Reference: pick.Reference, Name: s.name, Quant: pick.Quant, Size: pick.Size, Need: pick.Need, Free: pick.Free}
		}
	}
	switch {
	case best.Reference != "":
		return best, nil
	case answers == 0 && lastErr != nil:
		return tray.Suggestion{Note: fmt.Sprintf("Offline: the Hub could not be reached (%v), so there is no suggestion. The bundled model works without it.", shortErr(lastErr))}, nil
	case answers == 0:
		return tray.Suggestion{}, errors.New("no model to suggest")
	}
	return tray.Suggestion{Note: fmt.Sprintf("None of the small models suggested here fits in the %s of memory free now with room to spare; the bundled model runs anyway.", bytesText(free))}, nil
}

// pickQuant is the quantization the Hub search preselected when it is roomy, else the largest
// roomy one; nil when none is (or none that a reference can pull).
func pickQuant(quants []HubQuant) *HubQuant {
	var pick *HubQuant
	for i, q := range quants {
		switch {
		case !roomy(q), q.Reference == "": // "": a file no reference can pull
		case q.Best:
			return &quants[i]
		case pick == nil || q.Size > pick.Size:
			pick = &quants[i]
		}
	}
	return pick
}

// shortErr is an error's last part (a dial error's reason, not its whole URL chain).
func shortErr(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && i+2 < len(msg) {
		return msg[i+2:]
	}
	return msg
}

func bytesText(n int64) string { return humanize.Bytes(uint64(max(n, 0))) }

// quantSizer is Deps.Quants when set (tests), else the Discover tab's own sizing over
// Deps.Search; nil when neither is there.
func (c *Controller) quantSizer() HubQuants {
	switch {
	case c.d.Quants != nil:
		return c.d.Quants
	case c.d.Search != nil:
		return discoverSizer{c}
	}
	return nil
}

// discoverSizer is HubQuants over Controller.HubQuants: Discover's quantizations with their
// references, fit verdicts and the one Discover preselects.
type discoverSizer struct{ c *Controller }

func (s discoverSizer) HubQuants(ctx context.Context, repo string, ctxLen, lanes int) ([]HubQuant, error) {
	quants, err := s.c.HubQuants(ctx, repo, ctxLen, lanes)
	if err != nil {
		return nil, err
	}
	best, found := tray.BestFit(quants)
	out := make([]HubQuant, 0, len(quants))
	for _, q := range quants {
		out = append(out, HubQuant{Quant: q.Name, Reference: q.Reference, Size: q.Size, Need: q.Need,
			Free: q.Free, Fits: q.Fit() != tray.FitTooBig, Best: found && q.File == best.File})
	}
	return out, nil
}
