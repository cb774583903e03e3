package app

import (
	"path/filepath"

	"github.com/adrg/xdg"
)

// defaultDataDir is $XDG_DATA_HOME/superfluid (~/.local/share/superfluid on Linux). This file
// is the only user of xdg.
func defaultDataDir() string { return filepath.Join(xdg.DataHome, "superfluid") }

func databasePath(dataDir string) string { return filepath.Join(dataDir, "superfluid.db") }

func modelsDir(dataDir string) string { return filepath.Join(dataDir, "models") }

// filesDir holds the content of uploaded files and batch results.
func filesDir(dataDir string) string { return filepath.Join(dataDir, "files") }
