package tray

import (
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
	content     fyne.CanvasObject
}

func newServerView(a *App) *serverView {
	v := &serverView{app: a, status: widget.NewLabel(""), url: widget.NewLabel(""), loaded: widget.NewLabel("")}
	v.status.Wrapping = fyne.TextWrapWord
	v.url.Selectable = true
	v.start = widget.NewButtonWithIcon("Start", theme.MediaPlayIcon(), func() { v.run(a.c.StartServer) })
	v.stop = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), func() { v.run(a.c.StopServer) })
	v.copyURL = widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { a.copyURL() })
	form := widget.NewForm(
		widget.NewFormItem("Status", v.status),
		widget.NewFormItem("API base URL", container.NewBorder(nil, nil, nil, v.copyURL, v.url)),
		widget.NewFormItem("Loaded models", v.loaded),
	)
	help := widget.NewLabel("Point other apps at this server: OpenAI SDKs and tools take the base URL above; " +
		"Anthropic SDKs and Ollama clients take the same address without /v1. No API key is needed on this machine " +
		"(SDKs that insist on one accept any text).")
	help.Wrapping = fyne.TextWrapWord
	v.content = container.NewVBox(
		widget.NewLabelWithStyle("Server", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		widget.NewSeparator(), form, container.NewHBox(v.start, v.stop), help)
	return v
}

func (v *serverView) run(fn func() error) {
	go func() {
		if err := fn(); err != nil {
			fyne.Do(func() { v.app.showError(err) })
		}
		fyne.Do(v.app.refresh)
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
