package tray

import (
	"fmt"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
)

// TestModelCardHuge: a 1 MB model card (a 2,000-row table) opens showing its start and a note
// that says how much more there is and where to read it, not one RichText of all of it.
func TestModelCardHuge(t *testing.T) {
	app, f := newTestApp(t)
	discoverFixture(f)
	var card strings.Builder
	card.WriteString("# Tiny\n\n| quant | size | ppl |\n|---|---|---|\n")
	for i := 0; card.Len() < 1<<20; i++ {
		fmt.Fprintf(&card, "| Q%d_K_M | %d MB | %d.%02d |\n", i, i*7, i%13, i%100)
	}
	d := f.disc()
	f.mu.Lock()
	d.cards["acme/Tiny-GGUF"] = card.String()
	f.mu.Unlock()
	v := app.discover
	ui(app, func() { v.open("acme/Tiny-GGUF"); test.Tap(v.card) })
	eventually(t, app, "the card shows", func() bool { return v.cardText != nil })
	ui(app, func() {
		if n := len(v.cardText.String()); n > 2*maxCardBytes || !strings.Contains(v.cardText.String(), "| 7 MB | 1.01 |") {
			t.Errorf("the card shows %d bytes: %.200q", n, v.cardText.String())
		}
		if v.cardCut == nil || !strings.Contains(v.cardCut.Text, "KB more: read it all at https://huggingface.co/acme/Tiny-GGUF.") {
			t.Errorf("no note for the rest: %v", v.cardCut)
		}
	})
}

// TestModelCardJustPastTheCap: a card a few bytes past the cap says 1 KB more, not "0 KB more".
func TestModelCardJustPastTheCap(t *testing.T) {
	app, f := newTestApp(t)
	discoverFixture(f)
	line := strings.Repeat("a", 99) + "\n"
	d := f.disc()
	f.mu.Lock()
	d.cards["acme/Tiny-GGUF"] = strings.Repeat(line, maxCardBytes/len(line)+1) + "The last line.\n"
	f.mu.Unlock()
	v := app.discover
	ui(app, func() { v.open("acme/Tiny-GGUF"); test.Tap(v.card) })
	eventually(t, app, "the card shows", func() bool { return v.cardText != nil })
	ui(app, func() {
		if v.cardCut == nil || !strings.Contains(v.cardCut.Text, "goes on for 1 KB more") {
			t.Errorf("the note: %v", v.cardCut)
		}
	})
}
