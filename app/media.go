package app

import (
	"github.com/spf13/pflag"

	"github.com/superfluid/superfluid/runtime/media"
)

// mediaFlags declares the limits on the images and audio clips requests carry (serve, bench
// and the desktop app).
func mediaFlags(fs *pflag.FlagSet, cfg *Config) {
	fs.BoolVar(&cfg.AllowRemoteMedia, "allow-remote-media", cfg.AllowRemoteMedia, "fetch http(s) image and audio URLs that requests name (with size and time limits; never addresses of this machine or its link); by default only inline data is taken")
	fs.Var(bytesFlag{&cfg.MediaMaxBytes}, "media-max-bytes", `the largest image or audio file one request part may carry, e.g. "20MB" (0 = the default, 20 MiB)`)
	fs.IntVar(&cfg.MediaMaxParts, "media-max-parts", cfg.MediaMaxParts, "the most images and audio clips one request may carry (0 = the default, 20)")
	fs.Var(bytesFlag{&cfg.MediaMaxDecoded}, "media-max-decoded", `what one request's images and audio may decode to together, once per choice, e.g. "1GiB" (0 = the default, 512 MiB): a small compressed image can decode to 100 MB; the requests in flight hold at most four times this together (past it: 429)`)
}

// mediaLimits are the core's limits on media from cfg; zero fields take the defaults.
func mediaLimits(cfg *Config) media.Limits {
	l := media.DefaultLimits()
	l.AllowRemote = cfg.AllowRemoteMedia
	if cfg.MediaMaxBytes > 0 {
		l.MaxBytes = cfg.MediaMaxBytes
	}
	if cfg.MediaMaxParts > 0 {
		l.MaxParts = cfg.MediaMaxParts
	}
	if cfg.MediaMaxDecoded > 0 {
		l.MaxDecodedBytes = cfg.MediaMaxDecoded
	}
	return l
}
