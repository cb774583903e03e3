package app

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/superfluid/superfluid/runtime/media"
)

// TestMediaFlags: --allow-remote-media, --media-max-bytes and --media-max-parts become the
// core's media limits; unset, the defaults hold and remote URLs are off.
func TestMediaFlags(t *testing.T) {
	parse := func(args ...string) media.Limits {
		t.Helper()
		cfg := DefaultConfig()
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		mediaFlags(fs, &cfg)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return mediaLimits(&cfg)
	}
	def := media.DefaultLimits()
	if got := parse(); got != def || got.AllowRemote {
		t.Errorf("no flags: %+v, want the defaults %+v", got, def)
	}
	want := def
	want.AllowRemote, want.MaxBytes, want.MaxParts = true, 1<<20, 3
	if got := parse("--allow-remote-media", "--media-max-bytes", "1MiB", "--media-max-parts", "3"); got != want {
		t.Errorf("flags: %+v, want %+v", got, want)
	}
}
