// Command superfluid is a local LLM server and desktop app. All of it lives under app/.
package main

import (
	"os"

	"github.com/superfluid/superfluid/app"
	// Before fyne's package init reads the locale (see the package doc); Restore undoes it.
	"github.com/superfluid/superfluid/app/quietlocale"
)

func main() {
	quietlocale.Restore()
	os.Exit(app.Main(os.Args, os.Stdout, os.Stderr))
}
