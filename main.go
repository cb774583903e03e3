// Command superfluid is a local LLM server and desktop app. All of it lives under app/.
package main

import (
	"os"

	"github.com/superfluid/superfluid/app"
)

func main() { os.Exit(app.Main(os.Args, os.Stdout, os.Stderr)) }
