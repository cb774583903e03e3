package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// shoot writes a screenshot of the page to docs/screenshots/NAME.png when
// SUPERFLUID_SCREENSHOTS=1 (make screenshots); phone takes it 390 px wide.
func shoot(t *testing.T, ctx context.Context, name string, phone bool) {
	t.Helper()
	if os.Getenv("SUPERFLUID_SCREENSHOTS") != "1" {
		return
	}
	if phone {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
			t.Fatal(err)
		}
		defer chromedp.Do(ctx, chromedp.EmulateViewport(1100, 800))
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join("..", "docs", "screenshots", name+".png")
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", out)
}
