// Package packaging holds what bundles superfluid for each operating system: the Linux .desktop
// file, the macOS Info.plist and entitlements, and the commands for each OS (README.md). It has
// no code; its test checks that these files and FyneApp.toml agree on the app's id, name,
// version and icon, since `make package` and the OS-specific steps read them separately.
package packaging
