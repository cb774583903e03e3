package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/superfluid/superfluid/app/autostart"
)

// TestLoginEntryCarriesFlags: the start-at-login entry of an app started with --data-dir
// (relative, with a space), --models-dir and --port runs the same app at login: the entry's
// Exec line has them, absolute and quoted per the Desktop Entry spec; started with no flags,
// it has --hidden alone; a team's has team mode and its key policy, never an --api-key.
func TestLoginEntryCarriesFlags(t *testing.T) {
	cfgHome := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	work := t.TempDir()
	t.Chdir(work)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "Exec=/usr/bin/superfluid --hidden\n"},
		{[]string{"--data-dir", "my data", "--models-dir=/srv/models", "--port", "9000", "--hidden"},
			`Exec=/usr/bin/superfluid --hidden "--data-dir=` + filepath.Join(work, "my data") + `" --models-dir=/srv/models --port=9000` + "\n"},
		// A team's server on the network: team mode and its keys' file come along (without them
		// login started it out of team mode, or it refused to serve); the --api-key never does.
		{[]string{"--team", "--host", "0.0.0.0", "--key-policy", "keys.json", "--booking-max-length", "8h", "--api-key", "sk-secret"},
			"Exec=/usr/bin/superfluid --hidden --key-policy=" + filepath.Join(work, "keys.json") + " --host=0.0.0.0 --team=true --booking-max-length=8h0m0s\n"},
	} {
		cfg, hidden := DefaultConfig(), false
		cmd := &cobra.Command{Use: "superfluid"}
		desktopFlags(cmd, &cfg, &hidden)
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Fatal(err)
		}
		argv := append([]string{"/usr/bin/superfluid"}, loginArgs(cmd.Flags(), cfg)...)
		if err := autostart.Enable(argv); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(cfgHome, "autostart", autostart.ID+".desktop"))
		if err != nil || !strings.Contains(string(b), "\n"+tt.want) || strings.Contains(string(b), "sk-secret") {
			t.Fatalf("flags %q: entry\n%s\nwant %s (%v)", tt.args, b, tt.want, err)
		}
	}
}
