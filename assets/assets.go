// Package assets holds the files built into the binary: the application icon and the bundled
// model, stories260K, which makes a fresh install answer a chat with no network and no download.
package assets

import _ "embed"

// BundledModel is stories260K (llama architecture, 260K parameters, F32), a tiny story model
// trained on TinyStories by Andrej Karpathy for llama2.c, in llama.cpp's GGUF conversion. MIT
// licensed; see BUNDLED-MODEL-LICENSE.
//
//go:embed stories260K.gguf
var BundledModel []byte

// BundledModelID is the bundled model's catalog id.
const BundledModelID = "stories260K"

// BundledModelSHA256 is the bundled model's digest (checked by a test).
const BundledModelSHA256 = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"

// Icon is the application icon (PNG).
//
//go:embed icon.png
var Icon []byte

// Tray icons (PNG, 64×64), one per state the tray shows.
var (
	//go:embed tray-idle.png
	TrayIdle []byte
	//go:embed tray-loading.png
	TrayLoading []byte
	//go:embed tray-generating.png
	TrayGenerating []byte
	//go:embed tray-error.png
	TrayError []byte
)
