// Command fakehub serves GGUF files the way the Hugging Face Hub does (tree listing, resolve
// with a redirect to a second "CDN" host, Range requests), for screenshots and manual tests of
// downloads without a network. Each file pauses once at a chosen fraction, so a progress bar
// can be seen mid-way.
//
//	go run ./scripts/fakehub -pause 0.4 owner/repo=path/to/model.gguf ...
//
// -card OWNER/REPO=README.md gives a repository a model card; -info
// OWNER/REPO=DOWNLOADS,LIKES,LICENSE,PARAMETERS what the model search says of it (the Discover tab).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
)

func main() {
	pause := flag.Float64("pause", 0, "pause each download once at this fraction of the file (0: never); the client's stall timeout resumes it")
	var cards, infos repeated
	flag.Var(&cards, "card", "OWNER/REPO=FILE.md: the repository's model card (repeatable)")
	flag.Var(&infos, "info", "OWNER/REPO=DOWNLOADS,LIKES,LICENSE,PARAMETERS: what the search says of it (repeatable)")
	flag.Parse()
	hub := hftest.New()
	defer hub.Close()
	for _, c := range cards {
		repo, path, _ := strings.Cut(c, "=")
		hub.AddFileFromDisk(repo, "README.md", path)
	}
	for _, in := range infos {
		repo, spec, _ := strings.Cut(in, "=")
		f := strings.Split(spec, ",")
		if len(f) != 4 {
			fmt.Fprintf(os.Stderr, "fakehub: want -info OWNER/REPO=DOWNLOADS,LIKES,LICENSE,PARAMETERS, got %q\n", in)
			os.Exit(2)
		}
		num := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
		hub.SetInfo(repo, hftest.Info{Downloads: num(f[0]), Likes: num(f[1]), License: f[2], Parameters: num(f[3]),
			LastModified: time.Now().Add(-72 * time.Hour)})
	}
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

// repeated is a flag given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, " ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }
