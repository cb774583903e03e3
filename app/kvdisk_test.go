package app

import (
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"

	"github.com/superfluid/superfluid/runtime/llamacpp"
)

// TestKVDiskFlag: --kv-disk-max takes sizes with units and 0 turns the disk cache off; the
// default is the engine's, in <data>/kv.
func TestKVDiskFlag(t *testing.T) {
	for _, c := range []struct {
		arg  string
		want int64
		dir  bool
	}{
		{"", llamacpp.DefaultKVDiskMax, true},
		{"--kv-disk-max=4GB", 4_000_000_000, true},
		{"--kv-disk-max=512MiB", 512 << 20, true},
		{"--kv-disk-max=0", 0, false},
	} {
		cfg := DefaultConfig()
		cfg.DataDir = "/data"
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		kvDiskFlag(fs, &cfg)
		var args []string
		if c.arg != "" {
			args = []string{c.arg}
		}
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%q: %v", c.arg, err)
		}
		dir, limit := kvDisk(&cfg)
		if cfg.KVDiskMax != c.want || limit != c.want || (dir == filepath.Join("/data", "kv")) != c.dir || (dir == "") == c.dir {
			t.Errorf("%q: KVDiskMax %d, worker gets %q and %d; want %d", c.arg, cfg.KVDiskMax, dir, limit, c.want)
		}
	}
	cfg := DefaultConfig()
	if err := kvDiskFlagSet(&cfg).Parse([]string{"--kv-disk-max=lots"}); err == nil {
		t.Error("--kv-disk-max=lots was taken")
	}
}

func kvDiskFlagSet(cfg *Config) *pflag.FlagSet {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	kvDiskFlag(fs, cfg)
	return fs
}
