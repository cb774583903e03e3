package packaging

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/xml"
	"image/png"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hicolorSizes are the fixed sizes packaging/icons.sh renders into the .deb's icon theme.
var hicolorSizes = []int{16, 22, 24, 32, 48, 64, 128, 256, 512}

// TestDebPackage builds the .deb from bin/superfluid with packaging/deb.sh, the script make
// package runs, then unpacks it with dpkg-deb -x (never dpkg -i: the test must not install into
// the machine it runs on) and checks its control fields, its files and that the unpacked binary
// runs.
func TestDebPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: packing the 90 MB binary takes about 15 seconds")
	}
	requireTools(t, "dpkg-deb", "dpkg-shlibdeps", "appstreamcli", "desktop-file-validate", "rsvg-convert", "strip")
	bin, err := filepath.Abs(filepath.Join(root, "bin", "superfluid"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no %s to package (make test builds it first; or run make build): %v", bin, err)
	}
	meta := readTOML(t, filepath.Join(root, "FyneApp.toml"))
	version := str(t, meta["Details"], "Version")

	out := t.TempDir()
	cmd := exec.Command("bash", "deb.sh", bin, out)
	// gzip, not the default xz: xz takes twice as long on the binary and tests nothing more.
	cmd.Env = append(os.Environ(), "DEB_COMPRESSION=gzip")
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("deb.sh: %v\n%s", err, stderrOf(err))
	}
	deb := strings.TrimSpace(string(stdout))
	arch := strings.TrimSpace(run(t, "dpkg", "--print-architecture"))
	if want := filepath.Join(out, "superfluid_"+version+"_"+arch+".deb"); deb != want {
		t.Fatalf("deb.sh printed %q, want %q", deb, want)
	}

	unpacked := t.TempDir()
	run(t, "dpkg-deb", "-x", deb, unpacked)
	checkControl(t, deb, version, arch, unpacked)
	checkFiles(t, unpacked)
	checkInstalledDesktop(t, filepath.Join(unpacked, "usr/share/applications/io.superfluid.app.desktop"))
	checkInstalledMetainfo(t, filepath.Join(unpacked, "usr/share/metainfo/io.superfluid.app.metainfo.xml"), version)

	checkInstallRemove(t, deb)
	checkManPage(t, filepath.Join(unpacked, "usr/share/man/man1/superfluid.1.gz"))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	help, err := exec.CommandContext(ctx, filepath.Join(unpacked, "usr/bin/superfluid"), "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(help), "superfluid [command]") {
		t.Errorf("unpacked usr/bin/superfluid --help: %v\n%s", err, help)
	}
}

// checkManPage checks superfluid(1), which manpage.sh writes from the binary's --help: a man
// page header, the flags, and defaults that name "~", not the build machine's home.
func checkManPage(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	page, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, want := range []string{".TH SUPERFLUID 1 ", ".SH NAME\nsuperfluid \\- ", ".SH FLAGS", "\\fB\\-\\-port int\\fR", `"~/.local/share/superfluid"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("superfluid.1 lacks %q:\n%s", want, page)
		}
	}
}

// checkInstallRemove installs the package with dpkg into an empty root of its own (--root: this
// machine's packages are not touched; --force-depends, since that root has no libc6) and removes
// it again, which must leave no file behind: what dpkg -i and dpkg -r do on a user's machine.
func checkInstallRemove(t *testing.T, deb string) {
	t.Helper()
	r := t.TempDir()
	for _, d := range []string{"info", "updates", "triggers"} {
		if err := os.MkdirAll(filepath.Join(r, "var/lib/dpkg", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"status", "available"} {
		if err := os.WriteFile(filepath.Join(r, "var/lib/dpkg", f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dpkg := func(args ...string) string {
		return run(t, "dpkg", append([]string{"--root=" + r, "--force-depends", "--force-script-chrootless", "--log=/dev/null"}, args...)...)
	}
	dpkg("--install", deb)
	if status := dpkg("--status", "superfluid"); !strings.Contains(status, "Status: install ok installed") {
		t.Errorf("dpkg --status after --install:\n%s", status)
	}
	if _, err := os.Stat(filepath.Join(r, "usr/share/metainfo/io.superfluid.app.metainfo.xml")); err != nil {
		t.Errorf("after dpkg --install: %v", err)
	}
	dpkg("--remove", "superfluid")
	filepath.WalkDir(filepath.Join(r, "usr"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("dpkg --remove left %s", path)
		}
		return nil
	})
}

func checkControl(t *testing.T, deb, version, arch, unpacked string) {
	t.Helper()
	fields := map[string]string{}
	for _, f := range []string{"Package", "Version", "Architecture", "Maintainer", "Installed-Size", "Depends", "Section", "Priority", "Homepage", "Description"} {
		fields[f] = strings.TrimSpace(run(t, "dpkg-deb", "--field", deb, f))
		if fields[f] == "" {
			t.Errorf("control: no %s field", f)
		}
	}
	for f, want := range map[string]string{"Package": "superfluid", "Version": version, "Architecture": arch, "Section": "devel"} {
		if fields[f] != want {
			t.Errorf("control: %s: %q, want %q", f, fields[f], want)
		}
	}
	// The libraries the binary links against (make build's cgo: OpenGL and X11 for fyne,
	// libstdc++ for llama.cpp), each named by the Debian package that ships it.
	deps := map[string]bool{}
	for _, d := range strings.Split(fields["Depends"], ",") {
		deps[strings.Fields(d)[0]] = true
	}
	for _, want := range []string{"libc6", "libgl1", "libx11-6", "libstdc++6"} {
		if !deps[want] {
			t.Errorf("control: Depends %q lacks %s", fields["Depends"], want)
		}
	}
	size, err := strconv.Atoi(fields["Installed-Size"])
	// dpkg counts each file's KiB rounded up and 1 KiB for each directory: between the total's
	// KiB and that plus one for each entry.
	var total, entries int64
	filepath.WalkDir(filepath.Join(unpacked, "usr"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			info, _ := d.Info()
			total += info.Size()
		}
		entries++
		return err
	})
	if kib := int(total / 1024); err != nil || size < kib || size > kib+int(entries) {
		t.Errorf("control: Installed-Size %q, want %d to %d (KiB of the files)", fields["Installed-Size"], kib, kib+int(entries))
	}
}

// checkFiles checks the unpacked tree holds exactly the files a desktop install needs.
func checkFiles(t *testing.T, unpacked string) {
	t.Helper()
	want := []string{
		"usr/bin/superfluid",
		"usr/share/applications/io.superfluid.app.desktop",
		"usr/share/doc/superfluid/changelog.gz",
		"usr/share/doc/superfluid/copyright",
		"usr/share/icons/hicolor/scalable/apps/io.superfluid.app.svg",
		"usr/share/man/man1/superfluid.1.gz",
		"usr/share/metainfo/io.superfluid.app.metainfo.xml",
	}
	for _, s := range hicolorSizes {
		want = append(want, "usr/share/icons/hicolor/"+strconv.Itoa(s)+"x"+strconv.Itoa(s)+"/apps/io.superfluid.app.png")
	}
	var got []string
	err := filepath.WalkDir(unpacked, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(unpacked, path)
			got = append(got, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("files in the .deb:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if info, err := os.Stat(filepath.Join(unpacked, "usr/bin/superfluid")); err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("usr/bin/superfluid: %v, mode %v; want 0755", err, info.Mode())
	}
	for _, s := range hicolorSizes {
		path := filepath.Join(unpacked, "usr/share/icons/hicolor", strconv.Itoa(s)+"x"+strconv.Itoa(s), "apps/io.superfluid.app.png")
		if w, h := pngSize(t, path); w != s || h != s {
			t.Errorf("%s is %dx%d, want %dx%d", path, w, h, s, s)
		}
	}
	svg, err := os.ReadFile(filepath.Join(unpacked, "usr/share/icons/hicolor/scalable/apps/io.superfluid.app.svg"))
	if err != nil || xml.Unmarshal(svg, new(struct{})) != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("scalable icon: not an SVG (%v):\n%s", err, svg)
	}
}

// checkInstalledDesktop checks the installed .desktop file says what packaging/superfluid.desktop
// says (deb.sh drops only its comments).
func checkInstalledDesktop(t *testing.T, path string) {
	t.Helper()
	got, want := readDesktop(t, path), readDesktop(t, "superfluid.desktop")
	for k, v := range want {
		if got[k] != v {
			t.Errorf("installed .desktop: %s=%q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("installed .desktop has %d keys, packaging/superfluid.desktop %d: %v", len(got), len(want), got)
	}
}

func checkInstalledMetainfo(t *testing.T, path, version string) {
	t.Helper()
	m := readMetainfo(t, path)
	if m.ID != "io.superfluid.app" || m.Launchable != "io.superfluid.app.desktop" || m.Binary != "superfluid" {
		t.Errorf("installed metainfo: id %q, launchable %q, binary %q", m.ID, m.Launchable, m.Binary)
	}
	if len(m.Releases) == 0 || m.Releases[0].Version != version {
		t.Errorf("installed metainfo: releases %v, want the newest to be %s", m.Releases, version)
	}
}

// requireTools skips the test, naming what is missing, when a tool is not on PATH.
func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	var missing []string
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		t.Skipf("%s not installed (bash scripts/packaging/install.sh installs them; make test runs it)", strings.Join(missing, ", "))
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderrOf(err))
	}
	return string(out)
}

func stderrOf(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}

func pngSize(t *testing.T, path string) (int, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", path, err)
	}
	return cfg.Width, cfg.Height
}
