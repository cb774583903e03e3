package packaging

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// root is the repository root, where FyneApp.toml lives next to main.go.
const root = ".."

// TestMetadataAgrees checks FyneApp.toml, the .desktop file, the macOS plists, the icon and the
// app's fyne ID against each other.
func TestMetadataAgrees(t *testing.T) {
	meta := readTOML(t, filepath.Join(root, "FyneApp.toml"))
	details, linux := meta["Details"], meta["LinuxAndBSD"]
	if details == nil || linux == nil {
		t.Fatalf("FyneApp.toml: want sections [Details] and [LinuxAndBSD], got %v", meta)
	}
	id, name, version := str(t, details, "ID"), str(t, details, "Name"), str(t, details, "Version")
	if id != "io.superfluid.app" || name != "superfluid" {
		t.Errorf("FyneApp.toml: ID %q, Name %q; want io.superfluid.app, superfluid", id, name)
	}
	if n := len(strings.Split(version, ".")); n != 3 {
		t.Errorf("FyneApp.toml: Version %q: want x.y.z", version)
	}
	build, ok := details["Build"].(int)
	if !ok || build < 1 {
		t.Errorf("FyneApp.toml: Build %v: want an integer >= 1", details["Build"])
	}
	checkIcon(t, filepath.Join(root, str(t, details, "Icon")))
	checkAppID(t, id)

	// fyne package writes the .desktop file from [Details] and [LinuxAndBSD]; the copy in
	// packaging/ must say the same (make package also diffs it against the generated one).
	desktop := readDesktop(t, "superfluid.desktop")
	for key, want := range map[string]string{
		"Type":           "Application",
		"Name":           name,
		"Exec":           name, // the binary's name
		"Icon":           id,   // fyne installs the icon as share/pixmaps/<ID>.png
		"StartupWMClass": name,
		"GenericName":    str(t, linux, "GenericName"),
		"Comment":        str(t, linux, "Comment"),
		"Categories":     list(t, linux, "Categories"),
		"Keywords":       list(t, linux, "Keywords"),
	} {
		if got := desktop[key]; got != want {
			t.Errorf("superfluid.desktop: %s=%q, want %q (from FyneApp.toml)", key, got, want)
		}
	}
	if len(desktop) != 9 {
		t.Errorf("superfluid.desktop has keys fyne package does not write: %v", desktop)
	}

	info := readPlist(t, filepath.Join("darwin", "Info.plist"))
	for key, want := range map[string]any{
		"CFBundleIdentifier":         id,
		"CFBundleName":               name,
		"CFBundleExecutable":         name,
		"CFBundleShortVersionString": version,
		"CFBundleVersion":            strconv.Itoa(build),
		"CFBundleIconFile":           "icon.icns", // what fyne package -os darwin writes
		"CFBundlePackageType":        "APPL",
		"LSUIElement":                false, // the app has a window, not only a tray icon
		"NSHighResolutionCapable":    true,
	} {
		if got := info[key]; got != want {
			t.Errorf("darwin/Info.plist: %s = %v, want %v", key, got, want)
		}
	}
	ent := readPlist(t, filepath.Join("darwin", "entitlements.plist"))
	if ent["com.apple.security.app-sandbox"] != false || ent["com.apple.security.network.server"] != true {
		t.Errorf("darwin/entitlements.plist: want app-sandbox false and network.server true, got %v", ent)
	}
}

func checkIcon(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("FyneApp.toml names icon %s: %v", path, err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("icon %s: not a PNG: %v", path, err)
	}
	if cfg.Width != cfg.Height || cfg.Width < 64 {
		t.Errorf("icon %s is %dx%d: want a square PNG of at least 64 pixels", path, cfg.Width, cfg.Height)
	}
}

// checkAppID checks that the desktop app (app/) opens fyne with the same ID: fyne keys its
// preferences and storage on it, and the bundles name the .desktop file and icon after it.
func checkAppID(t *testing.T, id string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "app", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in app/: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(strconv.Quote(id))) {
			return
		}
	}
	t.Errorf("no non-test file in app/ contains %q: the fyne app ID (fyneapp.NewWithID) must be FyneApp.toml's ID", id)
}

func str(t *testing.T, section map[string]any, key string) string {
	t.Helper()
	s, ok := section[key].(string)
	if !ok || s == "" {
		t.Fatalf("FyneApp.toml: %s = %v: want a non-empty string", key, section[key])
	}
	return s
}

// list returns a string array in the .desktop file's form: "a;b;".
func list(t *testing.T, section map[string]any, key string) string {
	t.Helper()
	items, ok := section[key].([]string)
	if !ok || len(items) == 0 {
		t.Fatalf("FyneApp.toml: %s = %v: want a non-empty array of strings", key, section[key])
	}
	return strings.Join(items, ";") + ";"
}

// readTOML reads the subset of TOML FyneApp.toml uses: [sections] of key = value lines, where a
// value is a string, an integer or an array of strings on one line. Anything else fails the
// test rather than being skipped, so the check cannot pass on a file it did not understand.
func readTOML(t *testing.T, path string) map[string]map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]any{"": {}}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.TrimSpace(line[1 : len(line)-1])
			out[section] = map[string]any{}
			continue
		}
		key, raw, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s:%d: not key = value: %q", path, n, line)
		}
		v, err := tomlValue(strings.TrimSpace(raw))
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out[section][strings.TrimSpace(key)] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func tomlValue(raw string) (any, error) {
	switch {
	case strings.HasPrefix(raw, `"`):
		return strconv.Unquote(raw)
	case strings.HasPrefix(raw, "["):
		var items []string // an array of basic strings reads the same as JSON
		if err := json.Unmarshal([]byte(raw), &items); err != nil {
			return nil, fmt.Errorf("array %s: %w", raw, err)
		}
		return items, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return nil, fmt.Errorf("value %s: want a string, an integer or an array of strings", raw)
	}
	return n, nil
}

// readDesktop returns the [Desktop Entry] group's keys; a key twice or a line that is not a
// comment, a group header or key=value fails the test.
func readDesktop(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	group := ""
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "["):
			group = line
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || group != "[Desktop Entry]" {
			t.Fatalf("%s:%d: want key=value in [Desktop Entry], got %q", path, n+1, line)
		}
		if _, dup := out[key]; dup {
			t.Fatalf("%s:%d: %s twice", path, n+1, key)
		}
		out[key] = value
	}
	return out
}

// readPlist reads a property list whose root is a dict of strings, booleans, integers and
// arrays of strings (what Info.plist and entitlements.plist hold).
func readPlist(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name `xml:"plist"`
		Dict    struct {
			Items []struct {
				XMLName xml.Name
				Text    string   `xml:",chardata"`
				Strings []string `xml:"string"`
			} `xml:",any"`
		} `xml:"dict"`
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]any{}
	items := doc.Dict.Items
	if len(items) == 0 || len(items)%2 != 0 {
		t.Fatalf("%s: want a dict of key/value pairs, got %d elements", path, len(items))
	}
	for i := 0; i < len(items); i += 2 {
		k, v := items[i], items[i+1]
		if k.XMLName.Local != "key" {
			t.Fatalf("%s: element %d is <%s>, want <key>", path, i, k.XMLName.Local)
		}
		switch v.XMLName.Local {
		case "string", "integer":
			out[k.Text] = v.Text
		case "true", "false":
			out[k.Text] = v.XMLName.Local == "true"
		case "array":
			out[k.Text] = v.Strings
		default:
			t.Fatalf("%s: %s has a <%s> value, which this check does not read", path, k.Text, v.XMLName.Local)
		}
	}
	return out
}
