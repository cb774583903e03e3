// Command fakeproj writes a random-weight multimodal projector (an mmproj GGUF that llama.cpp's
// mtmd loads) for a text model of the given embedding width, for screenshots and manual tests
// of images and audio without a real vision or audio model. Its encodings are noise, so a reply
// changes with the clip but says nothing true about it.
//
//	go run ./scripts/fakeproj -embd 64 -kind vision models/mmproj-stories260K.gguf
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

func main() {
	embd := flag.Int("embd", 64, "the text model's embedding length (stories260K: 64)")
	kind := flag.String("kind", "vision", "vision (a CLIP image tower) or audio (a Whisper encoder)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: fakeproj [-embd N] [-kind vision|audio] OUT.gguf")
		os.Exit(2)
	}
	var err error
	switch *kind {
	case "vision":
		err = gguftest.WriteVisionProjector(flag.Arg(0), gguftest.VisionProjectorOptions{TextEmbd: *embd})
	case "audio":
		err = gguftest.WriteAudioProjector(flag.Arg(0), gguftest.AudioProjectorOptions{TextEmbd: *embd})
	default:
		err = fmt.Errorf("-kind is vision or audio, not %q", *kind)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeproj:", err)
		os.Exit(1)
	}
}
