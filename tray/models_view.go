package tray

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/dustin/go-humanize"
)

// modelsView is the Models tab: the catalog with Load, Unload and Delete, and a download box.
type modelsView struct {
	app  *App
	list *fyne.Container // one row per model, rebuilt on refresh
	rows map[string]*modelRow

	ref      *widget.Entry
	download *widget.Button
	cancel   *widget.Button
	bar      *widget.ProgressBar
	progress *widget.Label
	queued   []string // downloads to resume after the one running (firstrun_resume.go)
	pulling  context.CancelFunc
	settings *settingsForm // the open settings dialog's form (tests)
	started  time.Time
	lastFile string

	content fyne.CanvasObject
}

// modelRow is one catalog model's line.
type modelRow struct {
	name, details, state           *widget.Label
	senses                         *widget.Label // "vision · audio"; hidden for a text-only model
	load, unload, delete, settings *widget.Button
}

func newModelsView(a *App) *modelsView {
	v := &modelsView{app: a, list: container.NewVBox(), rows: map[string]*modelRow{}}
	v.ref = widget.NewEntry()
	v.ref.SetPlaceHolder("hf.co/OWNER/REPO:Q4_K_M")
	v.download = widget.NewButtonWithIcon("Download", theme.DownloadIcon(), v.startPull)
	v.download.Importance = widget.HighImportance
	v.cancel = widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), v.cancelPull)
	v.cancel.Disable()
	v.bar = widget.NewProgressBar()
	v.bar.Hide()
	v.progress = widget.NewLabel("")
	v.ref.OnSubmitted = func(string) { v.startPull() }

	downloadBox := container.NewVBox(
		widget.NewLabelWithStyle("Download from Hugging Face", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		container.NewBorder(nil, nil, nil, container.NewHBox(v.download, v.cancel), v.ref),
		v.bar, v.progress,
	)
	header := widget.NewLabelWithStyle("Models", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.content = container.NewBorder(container.NewVBox(header, widget.NewSeparator()),
		container.NewVBox(widget.NewSeparator(), downloadBox), nil, nil, container.NewVScroll(v.list))
	return v
}

// refresh rebuilds the rows from the controller's catalog.
func (v *modelsView) refresh() {
	models := v.app.c.Models()
	v.list.RemoveAll()
	v.rows = map[string]*modelRow{}
	if len(models) == 0 {
		v.list.Add(widget.NewLabel("The catalog is empty: download a model below, or run superfluid add PATH.gguf."))
	}
	running := v.app.c.Server().Running
	for _, m := range models {
		row := v.row(m, running)
		v.rows[m.ID] = row
		v.list.Add(container.NewBorder(nil, nil, nil,
			container.NewHBox(row.state, row.load, row.unload, row.settings, row.delete),
			container.NewVBox(container.NewBorder(nil, nil, nil, senseBadge(m, row.senses), row.name), row.details)))
		v.list.Add(widget.NewSeparator())
	}
	v.list.Refresh()
}

func (v *modelsView) row(m Model, running bool) *modelRow {
	id := m.ID
	r := &modelRow{
		name:    widget.NewLabelWithStyle(m.ID, fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		details: widget.NewLabel(modelDetails(m)),
		state:   widget.NewLabel(stateText(m)),
		senses:  widget.NewLabel(senseText(m)),
	}
	r.senses.Importance = widget.SuccessImportance
	// Long ids and details are cut with an ellipsis rather than widening the window.
	r.name.Truncation, r.details.Truncation = fyne.TextTruncateEllipsis, fyne.TextTruncateEllipsis
	r.load = widget.NewButtonWithIcon("Load", theme.MediaPlayIcon(), func() { v.act("load", id, v.app.c.Load) })
	r.unload = widget.NewButtonWithIcon("Unload", theme.MediaStopIcon(), func() { v.act("unload", id, v.app.c.Unload) })
	r.delete = widget.NewButtonWithIcon("Delete", theme.DeleteIcon(), func() { v.confirmDelete(id) })
	r.settings = widget.NewButtonWithIcon("", theme.SettingsIcon(), func() { v.showSettings(id) })
	switch {
	case !running || m.State == "missing" || m.State == "loading" || m.State == "unloading":
		r.load.Disable()
		r.unload.Disable()
	case m.Loaded():
		r.load.Disable()
	default:
		r.unload.Disable()
	}
	return r
}

// modelDetails is the second line of a model's row.
func modelDetails(m Model) string {
	parts := []string{}
	if m.Quantization != "" {
		parts = append(parts, m.Quantization)
	}
	parts = append(parts, humanize.Bytes(uint64(m.Size)))
	if m.Context > 0 {
		parts = append(parts, fmt.Sprintf("context %d", m.Context))
	}
	if m.Runtime != "" {
		parts = append(parts, m.Runtime)
	}
	if m.Need > 0 {
		parts = append(parts, "≈"+humanize.Bytes(uint64(m.Need))+" RAM")
	}
	if m.Source != "" {
		parts = append(parts, m.Source)
	}
	return strings.Join(parts, " · ")
}

// senseText says what a model takes besides text: "vision", "audio", "vision · audio" or "".
func senseText(m Model) string {
	var s []string
	if m.Vision {
		s = append(s, "vision")
	}
	if m.Audio {
		s = append(s, "audio")
	}
	return strings.Join(s, " · ")
}

// senseBadge is an eye and/or an ear (a speaker: fyne has no ear) beside the model's name with
// label saying the same in words; nil for a text-only model.
func senseBadge(m Model, label *widget.Label) fyne.CanvasObject {
	if !m.Vision && !m.Audio {
		return nil
	}
	box := container.NewHBox()
	if m.Vision {
		box.Add(widget.NewIcon(theme.VisibilityIcon()))
	}
	if m.Audio {
		box.Add(widget.NewIcon(theme.VolumeUpIcon()))
	}
	box.Add(label)
	return box
}

// stateText is a model's state as a person reads it.
func stateText(m Model) string {
	switch m.State {
	case "missing":
		return "File missing"
	case "failed":
		return "Failed to load"
	case "":
		return ""
	default:
		return strings.ToUpper(m.State[:1]) + m.State[1:]
	}
}

// act runs a model action off the UI goroutine and shows a failure in a dialog.
func (v *modelsView) act(what, id string, fn func(string) error) {
	go func() {
		if err := fn(id); err != nil {
			v.app.do(func() { v.app.showError(fmt.Errorf("%s %s: %w", what, id, err)) })
		}
		v.app.do(v.app.refresh)
	}()
}

func (v *modelsView) confirmDelete(id string) {
	dialog.ShowConfirm("Delete "+id+"?", "The model leaves the catalog; a file superfluid downloaded is deleted too.",
		func(ok bool) {
			if ok {
				v.act("delete", id, v.app.c.Delete)
			}
		}, v.app.win)
}

// startPull downloads the reference in the entry; progress arrives as events.
func (v *modelsView) startPull() { v.pull(strings.TrimSpace(v.ref.Text)) }

// pull downloads ref with this tab's row (the Discover tab's Download comes here too); false
// when a download is already running.
func (v *modelsView) pull(ref string) bool {
	if ref == "" || v.pulling != nil {
		return false
	}
	v.ref.SetText(ref)
	ctx, cancel := context.WithCancel(context.Background())
	v.pulling, v.started, v.lastFile = cancel, time.Now(), ""
	v.download.Disable()
	v.cancel.Enable()
	v.bar.SetValue(0)
	v.bar.Show()
	v.progress.SetText("Resolving " + ref + " …")
	go func() {
		err := v.app.c.Pull(ctx, ref)
		v.app.do(func() { v.pullDone(ref, err, ctx.Err() != nil) })
	}()
	return true
}

func (v *modelsView) cancelPull() {
	if v.pulling != nil {
		v.pulling()
	}
}

func (v *modelsView) pullDone(ref string, err error, cancelled bool) {
	v.pulling = nil
	v.download.Enable()
	v.cancel.Disable()
	switch {
	case cancelled:
		v.progress.SetText("Cancelled; Download again resumes where it stopped.")
	case err != nil:
		v.bar.Hide()
		v.progress.SetText("Failed: " + err.Error())
	default:
		v.bar.SetValue(1)
		v.progress.SetText("Downloaded " + ref + ".")
		v.ref.SetText("")
	}
	v.app.refresh()
	v.startQueued()
}

// showProgress draws a download's progress: bytes, speed and time left.
func (v *modelsView) showProgress(e Event) {
	if v.pulling == nil || e.Total <= 0 {
		return
	}
	if e.Model != v.lastFile {
		v.lastFile, v.started = e.Model, time.Now()
	}
	v.bar.SetValue(float64(e.Completed) / float64(e.Total))
	v.progress.SetText(progressText(e, time.Since(v.started)))
}

// progressText is "pulling: 12 MB / 100 MB · 45 MB/s · 2s left".
func progressText(e Event, elapsed time.Duration) string {
	s := fmt.Sprintf("%s %s: %s / %s", e.Status, path.Base(e.Model), humanize.Bytes(uint64(e.Completed)), humanize.Bytes(uint64(e.Total)))
	if secs := elapsed.Seconds(); secs > 0.2 && e.Completed > 0 && e.Completed < e.Total {
		rate := float64(e.Completed) / secs
		left := time.Duration(float64(e.Total-e.Completed) / rate * float64(time.Second)).Round(time.Second)
		s += fmt.Sprintf(" · %s/s · %s left", humanize.Bytes(uint64(rate)), left)
	}
	return s
}
