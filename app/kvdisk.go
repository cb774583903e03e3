package app

import (
	"path/filepath"

	"github.com/spf13/pflag"
)

// kvDir holds the prefixes the workers save (the prefix cache on disk), shared by every model.
func kvDir(dataDir string) string { return filepath.Join(dataDir, "kv") }

// kvDiskFlag declares --kv-disk-max (serve, bench and the desktop app).
func kvDiskFlag(fs *pflag.FlagSet, cfg *Config) {
	fs.Var(bytesFlag{&cfg.KVDiskMax}, "kv-disk-max", `disk the saved prompt prefixes may take (the prefix cache that survives restarts), e.g. "4GB" or "512MiB"; the least recently used go first (0 = no prefix cache on disk)`)
}

// kvDisk is the folder and cap of a generation worker's prefix cache on disk; "" and 0 turn
// it off.
func kvDisk(cfg *Config) (string, int64) {
	if cfg.KVDiskMax <= 0 || cfg.DataDir == "" {
		return "", 0
	}
	return kvDir(cfg.DataDir), cfg.KVDiskMax
}
