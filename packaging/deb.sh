#!/usr/bin/env bash
# Builds superfluid's Debian package from a built binary:
#   packaging/deb.sh BINARY OUTDIR     writes OUTDIR/superfluid_VERSION_ARCH.deb and prints its path
# `make package` runs it on bin/superfluid; packaging/deb_test.go runs the same script into a
# temporary folder. It stages the tree by hand and packs it with dpkg-deb (no debian/ source
# folder: the binary is built by make, not by dpkg-buildpackage). Before packing it validates the
# metainfo (appstreamcli) and the .desktop file (desktop-file-validate), so a bad file fails
# here, not in a software centre. The version is FyneApp.toml's; Depends is what dpkg-shlibdeps
# finds the binary links against.
# Environment: DEB_COMPRESSION (xz, the default; gzip or none for a quicker test build),
# DEB_MAINTAINER (the Maintainer field).
set -euo pipefail
bin=$(realpath "${1:?usage: packaging/deb.sh BINARY OUTDIR}")
out=$(realpath "${2:?usage: packaging/deb.sh BINARY OUTDIR}")
cd "$(dirname "$0")/.."

id=io.superfluid.app
name=superfluid
maintainer=${DEB_MAINTAINER:-superfluid developers <superfluid@users.noreply.github.com>}
for tool in dpkg-deb dpkg-shlibdeps appstreamcli desktop-file-validate rsvg-convert strip; do
  if ! command -v "$tool" >/dev/null; then
    echo "deb: $tool is missing; bash scripts/packaging/install.sh installs the packaging tools" >&2
    exit 1
  fi
done
version=$(sed -n 's/^ *Version *= *"\(.*\)"/\1/p' FyneApp.toml)
if ! grep -q "<release version=\"$version\"" packaging/$id.metainfo.xml; then
  echo "deb: packaging/$id.metainfo.xml has no <release version=\"$version\"> (FyneApp.toml's Version); add it" >&2
  exit 1
fi
arch=$(dpkg --print-architecture)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
install -D -m 0755 "$bin" "$root/usr/bin/$name"
# Stripped as dh_strip strips an executable (lintian calls an unstripped one an error): the
# symbol table and DWARF go, Go's own pclntab stays, so panics still print file:line.
strip --remove-section=.comment --remove-section=.note "$root/usr/bin/$name"
# packaging/superfluid.desktop's comments are about this repository; the installed file has none.
mkdir -p "$root/usr/share/applications" "$root/usr/share/metainfo" "$root/usr/share/doc/$name"
sed '/^#/d' packaging/superfluid.desktop > "$root/usr/share/applications/$id.desktop"
sed '/^<!--/,/-->$/d' packaging/$id.metainfo.xml > "$root/usr/share/metainfo/$id.metainfo.xml"
bash packaging/icons.sh hicolor "$root"
desktop-file-validate "$root/usr/share/applications/$id.desktop"
appstreamcli validate --no-net --pedantic "$root/usr/share/metainfo/$id.metainfo.xml" >/dev/null \
  || { appstreamcli validate --no-net --pedantic "$root/usr/share/metainfo/$id.metainfo.xml"; exit 1; }

# Plain text, not the machine-readable format: its Files stanzas describe source trees, and one
# binary holds code under several licenses.
{
  cat <<COPYRIGHT
superfluid, from https://github.com/superfluid/superfluid

The superfluid repository declares no license for its own code yet (so the AppStream
metainfo says LicenseRef-proprietary). The binary also holds, under their own licenses:

- llama.cpp and ggml (MIT), through github.com/ollama/ollama (MIT);
- the Go modules listed in the repository's go.mod, each under its own license;
- the bundled model stories260K, whose notice follows.

COPYRIGHT
  sed -n '/^MIT License/,$p' assets/BUNDLED-MODEL-LICENSE
} > "$root/usr/share/doc/$name/copyright"
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
printf '%s (%s) unstable; urgency=medium\n\n  * Built from the superfluid repository by packaging/deb.sh.\n\n -- %s  %s\n' \
  "$name" "$version" "$maintainer" "$(date -R -d "@$epoch")" \
  | gzip -9n > "$root/usr/share/doc/$name/changelog.gz"
mkdir -p "$root/usr/share/man/man1"
SOURCE_DATE_EPOCH=$epoch bash packaging/manpage.sh "$bin" "$version" | gzip -9n > "$root/usr/share/man/man1/$name.1.gz"
find "$root" -type d -exec chmod 0755 {} + && find "$root" -type f ! -path "*/usr/bin/*" -exec chmod 0644 {} +

# dpkg-shlibdeps wants to run inside a source tree: a debian/control with a Source line is enough.
mkdir -p "$work/src/debian" && echo "Source: $name" > "$work/src/debian/control"
depends=$(cd "$work/src" && dpkg-shlibdeps -O -e"$root/usr/bin/$name" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
if [ -z "$depends" ]; then
  echo "deb: dpkg-shlibdeps found no libraries for $bin" >&2
  (cd "$work/src" && dpkg-shlibdeps -O -e"$root/usr/bin/$name") >&2 || true
  exit 1
fi

# Installed-Size as dpkg-gencontrol counts it: each file's KiB rounded up, 1 for each directory.
installed_kib=$(find "$root/usr" \( -type f -printf '%s\n' \) -o \( -type d -printf '1024\n' \) \
  | awk '{ kib += int(($1 + 1023) / 1024) } END { print kib }')
mkdir -p "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<CONTROL
Package: $name
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_kib
Depends: $depends
Section: devel
Priority: optional
Homepage: https://github.com/superfluid/superfluid
Description: local LLM server with OpenAI, Anthropic and Ollama APIs
 superfluid runs language models on this computer with llama.cpp and serves
 them on 127.0.0.1 through the OpenAI, Anthropic and Ollama APIs. It is a
 desktop app with a tray icon, a window to download and load models and a
 chat playground; "superfluid serve" runs the same server without a display.
 A small model is built in, so a fresh install answers with no download.
CONTROL
# Every file dated by the last commit, so that two builds of one commit give the same tree.
find "$root" -exec touch -h -d "@$epoch" {} +
mkdir -p "$out"
deb=$out/${name}_${version}_${arch}.deb
dpkg-deb --root-owner-group -Z"${DEB_COMPRESSION:-xz}" --build "$root" "$deb" >/dev/null
echo "$deb"
