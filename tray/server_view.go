package tray

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
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
	host        *widget.Entry
	exposed     *widget.Label
	lanes       *widget.Label
	requests    *widget.Table
	log         []Request
	hidden      *widget.Check
	buttons     *fyne.Container // Start and Stop (and, outside team mode, its hint: team_view.go)
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
	v.host = widget.NewEntry()
	v.host.Validator = validHost
	v.exposed = widget.NewLabel("")
	v.exposed.Wrapping = fyne.TextWrapWord
	v.host.OnChanged = func(string) { v.showExposure() }
	setPort := widget.NewButton("Use address", func() { v.changePort() })
	v.port.OnSubmitted = func(string) { v.changePort() }
	v.host.OnSubmitted = func(string) { v.changePort() }
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
		widget.NewFormItem("Listen on", container.NewBorder(nil, v.exposed, nil, setPort,
			container.NewGridWithColumns(2, v.host, v.port))),
		widget.NewFormItem("Loaded models", v.loaded),
		widget.NewFormItem("Lanes", v.lanes),
		widget.NewFormItem("At start", container.NewVBox(v.hidden, a.desk.login)),
	)
	help := widget.NewLabel("OpenAI SDKs take the base URL; Anthropic SDKs and Ollama clients take it without /v1. " +
		"Without API keys (Keys tab) none is needed and SDKs that insist on one accept any text; with keys, give them one.")
	help.Wrapping = fyne.TextWrapWord
	v.buttons = container.NewHBox(v.start, v.stop)
	top := container.NewVBox(
		widget.NewLabelWithStyle("Server", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		widget.NewSeparator(), form, v.buttons, help,
		widget.NewLabelWithStyle("Recent requests", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	v.content = container.NewBorder(top, nil, nil, nil, v.requests)
	return v
}

var (
	requestColumns      = []string{"Time", "Model", "Endpoint", "Status", "Prompt", "Cached", "Reply", "Time taken", "Finish", "Drafted/kept", "Cache miss"}
	requestColumnWidths = []float32{80, 150, 170, 60, 65, 65, 60, 90, 80, 95, 150}
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
	case 8:
		if r.Error != "" {
			return "error"
		}
		return r.FinishReason
	case 9:
		if r.SpecProposed == 0 {
			return "—"
		}
		return strconv.Itoa(r.SpecProposed) + " / " + strconv.Itoa(r.SpecAccepted)
	default:
		return r.CacheMiss
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

// validHost accepts an IP address or localhost.
func validHost(s string) error {
	s = strings.TrimSpace(s)
	if s == "localhost" {
		return nil
	}
	if _, err := netip.ParseAddr(strings.Trim(s, "[]")); err != nil {
		return errors.New("an IP address such as 127.0.0.1 (this machine only) or 0.0.0.0 (every network)")
	}
	return nil
}

// showExposure warns when the server would answer other machines.
func (v *serverView) showExposure() {
	host := strings.Trim(strings.TrimSpace(v.host.Text), "[]")
	addr, err := netip.ParseAddr(host)
	if host == "localhost" || err != nil || addr.IsLoopback() {
		v.exposed.SetText("Only this machine can reach the server.")
		return
	}
	v.exposed.SetText("Other machines on the network can reach this address: the server starts there only with an API key (Keys tab), and every request must send one.")
}

// changePort applies the address fields: the server restarts there if it was running.
func (v *serverView) changePort() {
	for _, e := range []*widget.Entry{v.host, v.port} {
		if err := e.Validate(); err != nil {
			v.app.showError(err)
			return
		}
	}
	host := strings.Trim(strings.TrimSpace(v.host.Text), "[]")
	port, _ := strconv.Atoi(strings.TrimSpace(v.port.Text))
	v.run(func() error {
		running := v.app.c.Server().Running
		if running {
			if err := v.app.c.StopServer(); err != nil {
				return err
			}
		}
		if err := v.app.c.SetAddress(host, port); err != nil {
			return err
		}
		return v.app.c.StartServer()
	})
}

// refreshActivity redraws the lanes (one line per model) and the request log.
func (v *serverView) refreshActivity(a Activity) {
	v.lanes.SetText(laneSummary(a.Lanes))
	v.log = a.Requests
	v.requests.Refresh()
}

// laneSummary is "stories260K: 4 lanes, 1 busy, 267 tokens cached" for each loaded model.
func laneSummary(lanes []Lane) string {
	type sum struct{ lanes, busy, cached int }
	var order []string
	by := map[string]*sum{}
	for _, l := range lanes {
		s, ok := by[l.Model]
		if !ok {
			s = &sum{}
			by[l.Model] = s
			order = append(order, l.Model)
		}
		s.lanes++
		s.cached += l.CachedTokens
		if l.State != "idle" {
			s.busy++
		}
	}
	var lines []string
	for _, m := range order {
		s := by[m]
		lines = append(lines, fmt.Sprintf("%s: %d lanes, %d busy, %d tokens cached", m, s.lanes, s.busy, s.cached))
	}
	if len(lines) == 0 {
		return "no model loaded"
	}
	return strings.Join(lines, "\n")
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
	if host, port, err := net.SplitHostPort(st.Address); err == nil {
		focused := v.app.win.Canvas().Focused()
		if focused != v.port {
			v.port.SetText(port)
		}
		if focused != v.host {
			v.host.SetText(host)
		}
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
