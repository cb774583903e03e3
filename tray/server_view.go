package tray

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// serverView is the Server tab: status, address, Start and Stop, and the URL to give other apps.
type serverView struct {
	app         *App
	status      *widget.Label
	url         *widget.Label
	start, stop *widget.Button
	copyURL     *widget.Button
	loaded      *widget.Label
	port        *widget.Entry
	lanes       *widget.Label
	requests    *widget.Table
	log         []Request
	hidden      *widget.Check
	content     fyne.CanvasObject
}

func newServerView(a *App) *serverView {
	v := &serverView{app: a, status: widget.NewLabel(""), url: widget.NewLabel(""), loaded: widget.NewLabel("")}
	v.status.Wrapping = fyne.TextWrapWord
	v.url.Selectable = true
	v.start = widget.NewButtonWithIcon("Start", theme.MediaPlayIcon(), func() { v.run(a.c.StartServer) })
	v.stop = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), func() { v.run(a.c.StopServer) })
	v.copyURL = widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { a.copyURL() })
	v.port = widget.NewEntry()
	v.port.Validator = validPort
	setPort := widget.NewButton("Use port", func() { v.changePort() })
	v.port.OnSubmitted = func(string) { v.changePort() }
	v.lanes = widget.NewLabel("")
	v.lanes.Wrapping = fyne.TextWrapWord
	v.requests = widget.NewTable(func() (int, int) { return len(v.log) + 1, len(requestColumns) },
		func() fyne.CanvasObject { return widget.NewLabel("") },
		func(id widget.TableCellID, o fyne.CanvasObject) { o.(*widget.Label).SetText(v.cell(id)) })
	for i, w := range requestColumnWidths {
		v.requests.SetColumnWidth(i, w)
	}
	v.hidden = widget.NewCheck("Start in the tray without opening this window", func(on bool) {
		if err := a.c.SetStartHidden(on); err != nil {
			a.showError(err)
		}
	})
	v.hidden.Checked = a.c.StartHidden()
	form := widget.NewForm(
		widget.NewFormItem("Status", v.status),
		widget.NewFormItem("API base URL", container.NewBorder(nil, nil, nil, v.copyURL, v.url)),
		widget.NewFormItem("Port", container.NewBorder(nil, nil, nil, setPort, v.port)),
		widget.NewFormItem("Loaded models", v.loaded),
		widget.NewFormItem("Lanes", v.lanes),
		widget.NewFormItem("At start", v.hidden),
	)
	help := widget.NewLabel("Point other apps at this server: OpenAI SDKs and tools take the base URL above; " +
		"Anthropic SDKs and Ollama clients take the same address without /v1. No API key is needed on this machine " +
		"(SDKs that insist on one accept any text).")
	help.Wrapping = fyne.TextWrapWord
	top := container.NewVBox(
		widget.NewLabelWithStyle("Server", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		widget.NewSeparator(), form, container.NewHBox(v.start, v.stop), help,
		widget.NewLabelWithStyle("Recent requests", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	v.content = container.NewBorder(top, nil, nil, nil, v.requests)
	return v
}

var (
	requestColumns      = []string{"Time", "Model", "Endpoint", "Status", "Prompt", "Cached", "Reply", "Time taken", "Finish"}
	requestColumnWidths = []float32{80, 150, 170, 60, 65, 65, 60, 90, 80}
)

func (v *serverView) cell(id widget.TableCellID) string {
	if id.Row == 0 {
		return requestColumns[id.Col]
	}
	r := v.log[id.Row-1]
	switch id.Col {
	case 0:
		return r.Time
	case 1:
		return r.Model
	case 2:
		return r.Endpoint
	case 3:
		return strconv.Itoa(r.Status)
	case 4:
		return strconv.Itoa(r.PromptTokens)
	case 5:
		return strconv.Itoa(r.CachedTokens)
	case 6:
		return strconv.Itoa(r.CompletionTokens)
	case 7:
		return r.Duration
	default:
		if r.Error != "" {
			return "error"
		}
		return r.FinishReason
	}
}

// validPort accepts 1–65535.
func validPort(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > 65535 {
		return errors.New("a port is a number from 1 to 65535")
	}
	return nil
}

// changePort applies the port field: the server restarts there if it was running.
func (v *serverView) changePort() {
	if err := validPort(v.port.Text); err != nil {
		v.app.showError(err)
		return
	}
	port, _ := strconv.Atoi(strings.TrimSpace(v.port.Text))
	v.run(func() error {
		running := v.app.c.Server().Running
		if running {
			if err := v.app.c.StopServer(); err != nil {
				return err
			}
		}
		if err := v.app.c.SetPort(port); err != nil {
			return err
		}
		return v.app.c.StartServer()
	})
}

// refreshActivity redraws the lanes and the request log.
func (v *serverView) refreshActivity(a Activity) {
	var b strings.Builder
	for _, l := range a.Lanes {
		fmt.Fprintf(&b, "%s lane %d: %s", l.Model, l.ID, l.State)
		if l.State != "idle" {
			fmt.Fprintf(&b, " (%s, %d generated)", l.Task, l.Generated)
		}
		fmt.Fprintf(&b, ", %d tokens cached\n", l.CachedTokens)
	}
	if b.Len() == 0 {
		b.WriteString("no model loaded")
	}
	v.lanes.SetText(strings.TrimSpace(b.String()))
	v.log = a.Requests
	v.requests.Refresh()
}

func (v *serverView) run(fn func() error) {
	go func() {
		if err := fn(); err != nil {
			v.app.do(func() { v.app.showError(err) })
		}
		v.app.do(v.app.refresh)
	}()
}

func (v *serverView) refresh(st ServerStatus, models []Model) {
	switch {
	case st.Running:
		v.status.SetText("Running on " + st.Address)
		v.start.Disable()
		v.stop.Enable()
		v.copyURL.Enable()
	case st.Err != "":
		v.status.SetText("Stopped: " + st.Err)
		v.start.Enable()
		v.stop.Disable()
		v.copyURL.Disable()
	default:
		v.status.SetText("Stopped")
		v.start.Enable()
		v.stop.Disable()
		v.copyURL.Disable()
	}
	v.url.SetText(v.app.c.APIURL())
	if _, port, err := net.SplitHostPort(st.Address); err == nil && v.app.win.Canvas().Focused() != v.port {
		v.port.SetText(port)
	}
	n := 0
	names := ""
	for _, m := range models {
		if m.Loaded() {
			if n > 0 {
				names += ", "
			}
			names += m.ID
			n++
		}
	}
	if n == 0 {
		names = "none (a request loads its model)"
	}
	v.loaded.SetText(names)
}
