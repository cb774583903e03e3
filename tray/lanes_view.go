package tray

import (
	"errors"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// lanesView is the Server tab's Lanes sub-tab (team mode): each lane with its device, engine,
// model and state, Switch (a model picker; the row shows the drain) and Remove (confirmed), and
// Add (a form in a dialog). Errors are shown inline, in the view or the open dialog.
type lanesView struct {
	app *App
	// summary says how many lanes there are (or why they cannot be read); msg what the last
	// action did, or why it failed.
	summary, msg message
	list         *fyne.Container
	rows         map[string]*teamLaneRow // by lane name
	order        []string
	add          *widget.Button
	form         *laneForm   // the Add dialog open last (tests read it)
	switchF      *switchForm // the Switch dialog open last
	content      fyne.CanvasObject
}

// teamLaneRow is one lane in the list.
type teamLaneRow struct {
	lane           TeamLane
	title, state   *widget.Label
	switchB, remov *widget.Button
}

func newLanesView(a *App) *lanesView {
	v := &lanesView{app: a, summary: newMessage(), msg: newMessage(), list: container.NewVBox(), rows: map[string]*teamLaneRow{}}
	v.add = widget.NewButtonWithIcon("Add lane", theme.ContentAddIcon(), v.openAdd)
	help := widget.NewLabel("A lane serves one model at a time on a device, through an engine: local (the built-in " +
		"worker), openai (an OpenAI-compatible server: vLLM, SGLang, llama-server, Ollama, another superfluid) or " +
		"command (a server process superfluid starts). Requests go to the lane serving their model field.")
	help.Wrapping = fyne.TextWrapWord
	top := container.NewVBox(
		container.NewBorder(nil, nil, widget.NewLabelWithStyle("Lanes", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), v.add),
		widget.NewSeparator(), help, v.summary.Label, v.msg.Label)
	v.content = container.NewBorder(top, nil, nil, nil, container.NewVScroll(v.list))
	v.summary.info("Reading the lanes…")
	return v
}

// show redraws the list from lanes (err: why they could not be read). Rows are updated in
// place while the lanes are the same, so a button is not replaced under the pointer.
func (v *lanesView) show(lanes []TeamLane, err error) {
	if err != nil {
		v.summary.fail(fmt.Errorf("the lanes cannot be read: %w", err))
		return
	}
	names := make([]string, 0, len(lanes))
	for _, l := range lanes {
		names = append(names, l.Name)
	}
	if strings.Join(names, "\x00") != strings.Join(v.order, "\x00") || len(v.rows) != len(lanes) {
		v.rows, v.order = map[string]*teamLaneRow{}, names
		v.list.RemoveAll()
		for _, l := range lanes {
			r := v.newRow(l)
			v.rows[l.Name] = r
			v.list.Add(container.NewBorder(nil, nil, nil, container.NewCenter(container.NewHBox(r.switchB, r.remov)),
				container.NewVBox(r.title, r.state)))
			v.list.Add(widget.NewSeparator())
		}
		v.list.Refresh()
	}
	for _, l := range lanes {
		v.rows[l.Name].set(l)
	}
	if len(lanes) == 0 {
		v.summary.info("No lanes yet: Add lane serves a model of the catalog (local), a server at a URL (openai) or a command's server.")
		return
	}
	v.summary.info(fmt.Sprintf("%d %s.", len(lanes), map[bool]string{true: "lane", false: "lanes"}[len(lanes) == 1]))
}

func (v *lanesView) newRow(l TeamLane) *teamLaneRow {
	r := &teamLaneRow{title: widget.NewLabel(""), state: widget.NewLabel("")}
	r.title.TextStyle.Bold = true
	r.title.Truncation = fyne.TextTruncateEllipsis
	r.state.Wrapping = fyne.TextWrapWord
	name := l.Name
	r.switchB = widget.NewButtonWithIcon("Switch model", theme.ViewRefreshIcon(), func() { v.openSwitch(v.rows[name].lane) })
	r.remov = widget.NewButtonWithIcon("Remove", theme.DeleteIcon(), func() { v.confirmRemove(v.rows[name].lane) })
	return r
}

func (r *teamLaneRow) set(l TeamLane) {
	r.lane = l
	r.title.SetText(laneTitle(l))
	r.state.SetText(laneState(l))
	switch l.State {
	case LaneFailed:
		r.state.Importance = widget.DangerImportance
	case LaneSwitching, LaneLoading:
		r.state.Importance = widget.WarningImportance
	default:
		r.state.Importance = widget.SuccessImportance
	}
	r.state.Refresh()
}

// laneTitle is "big · cuda:0 · local · qwen3-32b".
func laneTitle(l TeamLane) string {
	parts := []string{l.Name, l.Device, l.Engine, l.Model}
	if l.Upstream != "" {
		parts = append(parts, l.Upstream)
	}
	if l.HasKey {
		parts = append(parts, "key stored")
	}
	return strings.Join(parts, " · ")
}

// laneState says what the lane does now, with the drain while it switches.
func laneState(l TeamLane) string {
	switch l.State {
	case LaneServing:
		return fmt.Sprintf("serving: %d %s running", l.Inflight, plural(l.Inflight, "request", "requests"))
	case LaneIdle:
		return "idle: ready, no request running"
	case LaneSwitching:
		return fmt.Sprintf("switching to %s: draining, %d running %s finishing first (new ones get model_switching)",
			l.Model, l.Inflight, plural(l.Inflight, "request", "requests"))
	case LaneLoading:
		return "loading " + l.Model + " (requests get model_unavailable until it serves)"
	case LaneFailed:
		return "failed to start " + l.Model + ": " + l.Err + " (retrying)"
	}
	return l.State
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// laneForm is the Add lane dialog.
type laneForm struct {
	name     *widget.Entry
	device   *widget.Select
	engine   *widget.RadioGroup
	upstream *widget.Entry
	key      *widget.Entry
	model    *widget.SelectEntry
	models   []string // the model picker's choices: the catalog's
	msg      message
	add      *widget.Button
	dialog   *dialog.CustomDialog
}

func (v *lanesView) openAdd() {
	f := &laneForm{name: widget.NewEntry(), upstream: widget.NewEntry(), key: widget.NewPasswordEntry(), msg: newMessage(),
		models: v.app.modelIDs()}
	f.name.SetPlaceHolder("a name without spaces, e.g. big or gpu0-chat")
	devices := v.app.c.LaneDevices()
	f.device = widget.NewSelect(devices, nil)
	f.device.PlaceHolder = "the device it runs on"
	if len(devices) > 0 {
		f.device.SetSelected(devices[0])
	}
	f.model = widget.NewSelectEntry(f.models)
	f.model.SetPlaceHolder("a model of the catalog, or the upstream's model name")
	f.key.SetPlaceHolder("optional; stored write-only, never shown again")
	f.engine = widget.NewRadioGroup([]string{"local", "openai", "command"}, func(kind string) { f.engineChanged(kind) })
	f.engine.Horizontal = true
	f.engine.SetSelected("local")
	form := widget.NewForm(
		widget.NewFormItem("Name", f.name),
		widget.NewFormItem("Engine", f.engine),
		widget.NewFormItem("Device", f.device),
		widget.NewFormItem("URL or command", f.upstream),
		widget.NewFormItem("Upstream key", f.key),
		widget.NewFormItem("Model", f.model),
	)
	f.add = widget.NewButtonWithIcon("Add", theme.ConfirmIcon(), func() { v.submitAdd(f) })
	f.add.Importance = widget.HighImportance
	cancel := widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), func() { f.dialog.Hide() })
	f.dialog = dialog.NewCustomWithoutButtons("Add a lane", container.NewVBox(form, f.msg.Label), v.app.win)
	f.dialog.SetButtons([]fyne.CanvasObject{cancel, f.add})
	f.dialog.Resize(fyne.NewSize(640, 380))
	v.form = f
	f.dialog.Show()
}

// engineChanged fits the form to the engine kind: a URL (and a key) for openai, a command line
// for command, neither for local.
func (f *laneForm) engineChanged(kind string) {
	if kind != "openai" && f.device.Selected == "remote" && len(f.device.Options) > 0 {
		f.device.SetSelected(f.device.Options[0]) // only an openai lane's server is elsewhere
	}
	switch kind {
	case "openai":
		f.upstream.Enable()
		f.upstream.SetPlaceHolder("the server's base URL, e.g. http://gpu-box:8000/v1")
		f.key.Enable()
		f.device.SetSelected("remote") // its server usually runs elsewhere
	case "command":
		f.upstream.Enable()
		f.upstream.SetPlaceHolder("vllm serve {model} --port {port}")
		f.key.SetText("")
		f.key.Disable()
	default:
		f.upstream.SetText("")
		f.upstream.SetPlaceHolder("not needed for the built-in worker")
		f.upstream.Disable()
		f.key.SetText("")
		f.key.Disable()
	}
}

func (v *lanesView) submitAdd(f *laneForm) {
	n := NewTeamLane{Name: strings.TrimSpace(f.name.Text), Device: f.device.Selected, Engine: f.engine.Selected,
		Model: strings.TrimSpace(f.model.Text), UpstreamKey: f.key.Text}
	switch n.Engine {
	case "openai":
		n.URL = strings.TrimSpace(f.upstream.Text)
	case "command":
		n.Command = strings.TrimSpace(f.upstream.Text)
	}
	if n.Name == "" {
		f.msg.fail(errors.New("name the lane first"))
		return
	}
	f.add.Disable()
	f.msg.info("Adding " + n.Name + "…")
	v.app.team.act(func() error { return v.app.c.AddLane(n) }, func(err error) {
		f.add.Enable()
		if err != nil {
			f.msg.fail(err) // the dialog stays open with what was typed
			return
		}
		f.dialog.Hide()
		v.msg.info("Added lane " + n.Name + ": its engine is starting.")
	})
}

// switchForm is the Switch model dialog.
type switchForm struct {
	lane   TeamLane
	model  *widget.SelectEntry
	models []string // the picker's choices: the catalog's
	msg    message
	ok     *widget.Button
	dialog *dialog.CustomDialog
}

func (v *lanesView) openSwitch(l TeamLane) {
	f := &switchForm{lane: l, models: v.app.modelIDs(), msg: newMessage()}
	f.model = widget.NewSelectEntry(f.models)
	f.model.SetText(l.Model)
	note := widget.NewLabel(fmt.Sprintf("Lane %s serves %s. Requests running on it finish first (draining); new ones get "+
		"503 model_switching until the new model serves.", l.Name, l.Model))
	note.Wrapping = fyne.TextWrapWord
	f.ok = widget.NewButtonWithIcon("Switch", theme.ConfirmIcon(), func() { v.submitSwitch(f) })
	f.ok.Importance = widget.HighImportance
	cancel := widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), func() { f.dialog.Hide() })
	f.dialog = dialog.NewCustomWithoutButtons("Switch the model of "+l.Name, container.NewVBox(note,
		widget.NewForm(widget.NewFormItem("Model", f.model)), f.msg.Label), v.app.win)
	f.dialog.SetButtons([]fyne.CanvasObject{cancel, f.ok})
	f.dialog.Resize(fyne.NewSize(560, 260))
	v.switchF = f
	f.dialog.Show()
}

func (v *lanesView) submitSwitch(f *switchForm) {
	model := strings.TrimSpace(f.model.Text)
	if model == "" {
		f.msg.fail(errors.New("pick the model to switch to"))
		return
	}
	f.ok.Disable()
	v.app.team.act(func() error { return v.app.c.SwitchLane(f.lane.Name, model) }, func(err error) {
		f.ok.Enable()
		if err != nil {
			f.msg.fail(err)
			return
		}
		f.dialog.Hide()
		v.msg.info("Lane " + f.lane.Name + " is switching to " + model + ".")
	})
}

// confirmRemove asks before removing a lane.
func (v *lanesView) confirmRemove(l TeamLane) {
	d := dialog.NewConfirm("Remove lane "+l.Name+"?", fmt.Sprintf("Requests running on it finish first; then its engine "+
		"stops and %s is no longer served here. This cannot be undone.", l.Model), func(ok bool) {
		if ok {
			v.remove(l.Name)
		}
	}, v.app.win)
	d.SetConfirmText("Remove")
	d.Show()
}

func (v *lanesView) remove(name string) {
	if r := v.rows[name]; r != nil {
		r.remov.Disable()
		r.state.SetText("removing: running requests finish first…")
	}
	v.app.team.act(func() error { return v.app.c.RemoveLane(name) }, func(err error) {
		if r := v.rows[name]; r != nil {
			r.remov.Enable()
		}
		if err != nil {
			v.msg.fail(err)
			return
		}
		v.msg.info("Removed lane " + name + ".")
	})
}
