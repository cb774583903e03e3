package packaging

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestIconsRenderedFromSVG checks that the committed PNGs are renders of assets/icon.svg at the
// sizes the bundles need (packaging/icons.sh assets rewrites them after an edit to the SVG).
func TestIconsRenderedFromSVG(t *testing.T) {
	committed := map[string]int{"assets/icon.png": 256, "assets/icon-1024.png": 1024}
	for path, size := range committed {
		if w, h := pngSize(t, filepath.Join(root, path)); w != size || h != size {
			t.Errorf("%s is %dx%d, want %dx%d", path, w, h, size, size)
		}
	}
	requireTools(t, "rsvg-convert")
	for path, size := range committed {
		fresh := filepath.Join(t.TempDir(), "icon.png")
		n := strconv.Itoa(size)
		if out, err := exec.Command("rsvg-convert", "--width", n, "--height", n, "--format", "png",
			filepath.Join(root, "assets/icon.svg"), "--output", fresh).CombinedOutput(); err != nil {
			t.Fatalf("rsvg-convert: %v\n%s", err, out)
		}
		// Another librsvg may round edge pixels differently (a large difference on few pixels);
		// a changed shape or colour moves the mean.
		if worst, mean := diff(decodePNG(t, filepath.Join(root, path)), decodePNG(t, fresh)); worst > 64 || mean > 0.5 {
			t.Errorf("%s differs from a fresh render of assets/icon.svg (up to %d/255 in a channel, %.2f on average): run packaging/icons.sh assets", path, worst, mean)
		}
	}
}

// TestBundleIconSources checks the icons fyne package turns into the macOS and Windows icons.
// macOS: the .icns is made from the --icon the README passes, scaled into 824 of 1024 pixels,
// so the source must be at least 1024 wide. Windows: fyne writes a .ico with one image, the
// FyneApp.toml icon, and stores its width in one byte (0 means 256), so it must be 256 wide: a
// larger image would be announced with a wrong size.
func TestBundleIconSources(t *testing.T) {
	meta := readTOML(t, filepath.Join(root, "FyneApp.toml"))
	if w, h := pngSize(t, filepath.Join(root, str(t, meta["Details"], "Icon"))); w != 256 || h != 256 {
		t.Errorf("FyneApp.toml's Icon (the Windows .ico and Linux pixmap source) is %dx%d, want 256x256", w, h)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "--os darwin --icon ../assets/icon-1024.png") {
		t.Errorf("README.md's macOS command does not pass --icon ../assets/icon-1024.png: fyne would scale the 256-pixel FyneApp.toml icon up for the .icns")
	}
}

// TestWindowsVersionInfo checks the version fyne package links into superfluid.exe: it joins
// Version and Build as a.b.c.build, and the exe's fixed version info holds each part as a 16-bit
// number (fyne logs an error and writes 0 for a part that is not one).
func TestWindowsVersionInfo(t *testing.T) {
	details := readTOML(t, filepath.Join(root, "FyneApp.toml"))["Details"]
	combined := str(t, details, "Version") + "." + strconv.Itoa(details["Build"].(int))
	parts := strings.Split(combined, ".")
	if len(parts) != 4 {
		t.Fatalf("Windows version %q: want four parts", combined)
	}
	for _, p := range parts {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || (p != "0" && strings.HasPrefix(p, "0")) {
			t.Errorf("Windows version %q: part %q is not a 16-bit number (%v, %d)", combined, p, err, n)
		}
	}
	info := readPlist(t, filepath.Join("darwin", "Info.plist"))
	if fmt.Sprint(info["CFBundleShortVersionString"], ".", info["CFBundleVersion"]) != combined {
		t.Errorf("Windows version %q differs from Info.plist's %v.%v", combined, info["CFBundleShortVersionString"], info["CFBundleVersion"])
	}
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

// diff returns the largest difference of one channel between two images of one size, and the
// mean over all channels and pixels, in 8-bit steps (255 when the sizes differ).
func diff(a, b image.Image) (worst int, mean float64) {
	if a.Bounds() != b.Bounds() {
		return 255, 255
	}
	sum := 0
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
			r1, g1, b1, a1 := a.At(x, y).RGBA()
			r2, g2, b2, a2 := b.At(x, y).RGBA()
			for _, d := range []int{int(r1) - int(r2), int(g1) - int(g2), int(b1) - int(b2), int(a1) - int(a2)} {
				d = max(d, -d) >> 8
				worst = max(worst, d)
				sum += d
			}
		}
	}
	return worst, float64(sum) / float64(4*a.Bounds().Dx()*a.Bounds().Dy())
}
