// Package packaging holds what bundles superfluid for each operating system: the scripts that
// build the Linux .deb (deb.sh) and render the icons from assets/icon.svg (icons.sh), the
// .desktop file, the AppStream metainfo, the macOS Info.plist and entitlements, and the commands
// for each OS (README.md). It has no code; its tests check that these files and FyneApp.toml
// agree on the app's id, name, version and icon, since `make package` and the OS-specific steps
// read them separately, and build, unpack and install the .deb from bin/superfluid.
package packaging
