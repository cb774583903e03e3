package tray

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"fyne.io/fyne/v2/theme"
)

// shootWindow writes the window, drawn by fyne's software painter in the default theme, to
// docs/screenshots/NAME.png when SUPERFLUID_SCREENSHOTS=1 (make screenshots takes the real app
// under Xvfb; this covers states the real app cannot reach with the bundled model).
func shootWindow(t *testing.T, app *App, name string) {
	t.Helper()
	if os.Getenv("SUPERFLUID_SCREENSHOTS") != "1" {
		return
	}
	var err error
	ui(app, func() {
		app.fyne.Settings().SetTheme(theme.DefaultTheme())
		img := app.win.Canvas().Capture()
		var f *os.File
		if f, err = os.Create(filepath.Join("..", "docs", "screenshots", name+".png")); err != nil {
			return
		}
		defer f.Close()
		err = png.Encode(f, img)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote docs/screenshots/%s.png", name)
}
