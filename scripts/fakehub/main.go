// Command fakehub serves GGUF files the way the Hugging Face Hub does (tree listing, resolve
// with a redirect to a second "CDN" host, Range requests), for screenshots and manual tests of
// downloads without a network. Each file pauses once at a chosen fraction, so a progress bar
// can be seen mid-way.
//
//	go run ./scripts/fakehub -pause 0.4 owner/repo=path/to/model.gguf ...
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
)

func main() {
	pause := flag.Float64("pause", 0, "pause each download once at this fraction of the file (0: never); the client's stall timeout resumes it")
	flag.Parse()
	hub := hftest.New()
	defer hub.Close()
	for _, arg := range flag.Args() {
		repo, path, ok := strings.Cut(arg, "=")
		st, err := os.Stat(path)
		if !ok || err != nil {
			fmt.Fprintf(os.Stderr, "fakehub: want OWNER/REPO=FILE.gguf, got %q (%v)\n", arg, err)
			os.Exit(2)
		}
		name := filepath.Base(path)
		hub.AddFileFromDisk(repo, name, path)
		if *pause > 0 {
			hub.Faults(repo, name).StallAt.Store(int64(float64(st.Size()) * *pause))
		}
	}
	fmt.Println(hub.URL())
	ctx := make(chan os.Signal, 1)
	signal.Notify(ctx, os.Interrupt, syscall.SIGTERM)
	<-ctx
}
