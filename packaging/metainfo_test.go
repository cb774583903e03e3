package packaging

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// metainfo is the part of an AppStream component file the checks read.
type metainfo struct {
	XMLName    xml.Name `xml:"component"`
	Type       string   `xml:"type,attr"`
	ID         string   `xml:"id"`
	Name       string   `xml:"name"`
	Summary    string   `xml:"summary"`
	Launchable string   `xml:"launchable"`
	Binary     string   `xml:"provides>binary"`
	License    string   `xml:"project_license"`
	MetaLic    string   `xml:"metadata_license"`
	Releases   []struct {
		Version string `xml:"version,attr"`
		Date    string `xml:"date,attr"`
	} `xml:"releases>release"`
	Rating struct {
		Type string `xml:"type,attr"`
	} `xml:"content_rating"`
}

func readMetainfo(t *testing.T, path string) metainfo {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m metainfo
	if err := xml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// TestMetainfoAgrees checks the AppStream file against FyneApp.toml and the .desktop file: a
// software centre joins them by the launchable's name, and shows the newest release's version.
func TestMetainfoAgrees(t *testing.T) {
	meta := readTOML(t, filepath.Join(root, "FyneApp.toml"))
	details := meta["Details"]
	m := readMetainfo(t, "io.superfluid.app.metainfo.xml")
	id := str(t, details, "ID")
	for what, got := range map[string][2]string{
		"component type":   {m.Type, "desktop-application"},
		"id":               {m.ID, id},
		"name":             {m.Name, str(t, details, "Name")},
		"launchable":       {m.Launchable, id + ".desktop"}, // what make package installs the .desktop file as
		"provides binary":  {m.Binary, str(t, details, "Name")},
		"metadata_license": {m.MetaLic, "CC0-1.0"},
		"content_rating":   {m.Rating.Type, "oars-1.1"},
	} {
		if got[0] != got[1] {
			t.Errorf("metainfo %s: %q, want %q", what, got[0], got[1])
		}
	}
	if m.Summary == "" || m.License == "" {
		t.Errorf("metainfo: summary %q, project_license %q: want both", m.Summary, m.License)
	}
	if len(m.Releases) == 0 || m.Releases[0].Version != str(t, details, "Version") || m.Releases[0].Date == "" {
		t.Errorf("metainfo releases %v: want the first (newest) to be FyneApp.toml's Version %s, with a date", m.Releases, str(t, details, "Version"))
	}
}

// TestMetainfoValidates runs the validators make package runs. The broken copy checks that the
// validator is really consulted: a component with no summary must fail.
func TestMetainfoValidates(t *testing.T) {
	requireTools(t, "appstreamcli", "desktop-file-validate")
	if out, err := exec.Command("appstreamcli", "validate", "--no-net", "--pedantic", "io.superfluid.app.metainfo.xml").CombinedOutput(); err != nil {
		t.Errorf("appstreamcli validate: %v\n%s", err, out)
	}
	if out, err := exec.Command("desktop-file-validate", "superfluid.desktop").CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("desktop-file-validate superfluid.desktop: %v\n%s", err, out)
	}

	b, err := os.ReadFile("io.superfluid.app.metainfo.xml")
	if err != nil {
		t.Fatal(err)
	}
	start, end := strings.Index(string(b), "<summary>"), strings.Index(string(b), "</summary>")
	broken := filepath.Join(t.TempDir(), "io.superfluid.app.metainfo.xml")
	if err := os.WriteFile(broken, append(b[:start:start], b[end+len("</summary>"):]...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("appstreamcli", "validate", "--no-net", broken).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "summary") {
		t.Errorf("appstreamcli validate on a component without <summary>: %v, want a failure naming it:\n%s", err, out)
	}
}

// TestDebRefusesStaleMetainfo raises FyneApp.toml's version in a copy of the files deb.sh reads
// and checks the script stops before packing, saying which line to add.
func TestDebRefusesStaleMetainfo(t *testing.T) {
	requireTools(t, "dpkg-deb", "dpkg-shlibdeps", "appstreamcli", "desktop-file-validate", "rsvg-convert", "strip")
	dir := t.TempDir()
	for _, f := range []string{"packaging/deb.sh", "packaging/icons.sh", "packaging/manpage.sh", "packaging/superfluid.desktop",
		"packaging/io.superfluid.app.metainfo.xml", "assets/icon.svg", "assets/BUNDLED-MODEL-LICENSE", "FyneApp.toml"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "FyneApp.toml" {
			b = []byte(strings.Replace(string(b), `Version = "`, `Version = "9.`, 1))
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("bash", filepath.Join(dir, "packaging/deb.sh"), "/bin/true", filepath.Join(dir, "dist")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `has no <release version="9.`) {
		t.Errorf("deb.sh with a version the metainfo lacks: %v, want it to stop and name the missing release:\n%s", err, out)
	}
	if debs, _ := filepath.Glob(filepath.Join(dir, "dist", "*.deb")); len(debs) > 0 {
		t.Errorf("deb.sh wrote %v despite the stale metainfo", debs)
	}
}
