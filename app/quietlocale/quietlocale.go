// Package quietlocale keeps the desktop toolkit from logging "Fyne error: Error parsing user
// locale C" at every start (every CLI command, the server) on machines whose locale is C or
// POSIX, as servers and containers have (LANG=C.UTF-8): fyne reads the locale in a package
// init, before main runs. Imported first by the command, this package's init gives the variable
// fyne reads an English locale for that moment, and Restore puts the user's value back, so the
// program and its workers see the environment they were started with.
package quietlocale

import (
	"os"
	"strings"
)

// changed is the variable init replaced ("" when none) and saved its value.
var changed, saved string

func init() { changed, saved = quiet() }

// quiet replaces the first of the variables fyne's locale lookup reads (LC_ALL, LC_MESSAGES,
// LANG, in that order, the first set one wins) when it names the C or POSIX locale, and says
// which it replaced and its value.
func quiet() (string, string) {
	for _, name := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		if lang, _, _ := strings.Cut(strings.SplitN(v, "@", 2)[0], "."); lang != "C" && lang != "POSIX" {
			return "", ""
		}
		os.Setenv(name, "en_US.UTF-8")
		return name, v
	}
	return "", ""
}

// Restore puts back the variable init replaced; the command calls it first thing in main.
func Restore() {
	if changed != "" {
		os.Setenv(changed, saved)
		changed = ""
	}
}
