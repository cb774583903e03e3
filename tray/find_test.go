package tray

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// findObject looks through o and what it contains (containers and widgets' renderers: dialogs
// live in the canvas's overlays) for the first T that match accepts; the zero T when none.
func findObject[T fyne.CanvasObject](o fyne.CanvasObject, match func(T) bool) T {
	if v, ok := o.(T); ok && match(v) {
		return v
	}
	var children []fyne.CanvasObject
	switch w := o.(type) {
	case *fyne.Container:
		children = w.Objects
	case fyne.Widget:
		children = test.WidgetRenderer(w).Objects()
	}
	for _, c := range children {
		if v := findObject(c, match); any(v) != any(*new(T)) {
			return v
		}
	}
	var none T
	return none
}

// findButton looks for the button labelled text in o.
func findButton(o fyne.CanvasObject, text string) *widget.Button {
	return findObject(o, func(b *widget.Button) bool { return b.Text == text })
}

// findLabel looks for a label whose text contains text in o.
func findLabel(o fyne.CanvasObject, text string) *widget.Label {
	return findObject(o, func(l *widget.Label) bool { return strings.Contains(l.Text, text) })
}
