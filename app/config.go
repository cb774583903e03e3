// Package app is the composition root: it turns flags and stored settings into one Config,
// opens the store, builds the model manager (its catalog on the store, its workers as child
// processes), wires the core, the metrics and the HTTP server, builds the desktop app's
// Controller (app/desktop), and runs the subcommands (serve, pull, list, add, rm, keys, usage,
// bench, worker).
package app

import (
	"cmp"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/superfluid/superfluid/runtime/llamacpp"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/runlog"
)

// Config is everything the program is told, built once from flags (and later settings).
type Config struct {
	Host string
	Port int
	// ModelPath is the model serve preloads: a catalog id, the path of a .gguf file (registered
	// in place) or a Hugging Face reference (pulled first when missing). "" preloads nothing;
	// every catalog model still loads on its first request.
	ModelPath string
	// Projector is the multimodal projector (mmproj) GGUF of the model serve preloads
	// (--mmproj), checked against it and recorded with it; "" keeps the catalog's (one beside
	// the model is found).
	Projector string
	// ModelKeepAlive is how long an idle model stays loaded (--keep-alive; negative: forever).
	ModelKeepAlive time.Duration
	// MaxLoaded bounds the models loaded at once (0: no bound).
	MaxLoaded int
	// MemoryBudget bounds the estimated RAM of loaded models (0: 3/4 of the RAM available).
	MemoryBudget int64
	// UnloadDrain bounds how long an unload (admin, settings change, delete) lets the model's
	// requests in flight finish before it stops them (0: 2 minutes).
	UnloadDrain time.Duration
	// HFEndpoint is the Hugging Face base URL (HF_ENDPOINT); HFToken its token (HF_TOKEN), sent
	// only to that host.
	HFEndpoint, HFToken string
	// ContextLength is one request's window (prompt + completion); 0 = the model's, capped at 4096.
	ContextLength int
	Parallel      int
	Threads       int
	// MaxTokens caps completions that name no cap; 0 fills the context.
	MaxTokens int
	// Speculative is the speculation mode of models whose settings name none (--speculative).
	Speculative string
	// Queue bounds the generations waiting for a lane; past it requests get 429.
	Queue int
	// CompletionBurst and CompletionRate are the per-client fill-in-the-middle token bucket;
	// CompletionDeadline cuts fill-in-the-middle generations (0 = none).
	CompletionBurst    int
	CompletionRate     float64
	CompletionDeadline time.Duration
	// DataDir holds everything the server writes (the database, later files and caches).
	DataDir string
	// ModelsDir is the models folder (--models-dir); "" is the one the desktop app moved the
	// models to (a setting in the store), else <DataDir>/models.
	ModelsDir string
	// RecordsDays is how many days request records are kept (--records-days); older ones are
	// pruned in the background. 0 keeps them forever.
	RecordsDays int
	// FilesMaxBytes caps the files kept (uploads and batch results, --files-max-bytes); past it
	// uploads get 413 files_quota_exceeded. 0 is no cap.
	FilesMaxBytes int64
	// KVDiskMax caps the prefix cache on disk in <DataDir>/kv (--kv-disk-max); 0 turns it off.
	KVDiskMax int64
	// AllowRemoteMedia lets requests name http(s) image and audio URLs, which the server
	// fetches (--allow-remote-media); MediaMaxBytes and MediaMaxParts bound one part's file and
	// one request's parts (--media-max-bytes, --media-max-parts; 0: the defaults);
	// MediaMaxDecoded what a request's media decode to, once per choice (--media-max-decoded).
	// app/media.go.
	AllowRemoteMedia bool
	MediaMaxBytes    int64
	MediaMaxParts    int
	MediaMaxDecoded  int64
	// FilesExpiry is how long files are kept (--files-expiry); 0 keeps them until deleted.
	FilesExpiry time.Duration
	// KeepAlive is the SSE keep-alive interval.
	KeepAlive time.Duration
	// WriteTimeout bounds each write of a reply (a streamed frame, a whole JSON reply, a chunk
	// of a file download); a client that stops reading for longer is dropped and a stream's
	// generation stopped. Request bodies get server.DefaultReadTimeout per read, and must keep
	// up server.MinBodyRate on average after the first.
	WriteTimeout time.Duration
	// TrustedProxies are the reverse proxies (addresses or CIDR ranges) whose X-Forwarded-For
	// names the client (--trusted-proxies); empty trusts no such header.
	TrustedProxies []string
	// APIKey is the admin key of --api-key ("" for none).
	APIKey string
	// KeyPolicy is the --key-policy file listing several keys ("" for none; see auth.ParsePolicy).
	KeyPolicy string
	// InsecureOpen lets the server listen on a non-loopback address without any API key
	// (--insecure-open); otherwise it refuses to start there.
	InsecureOpen bool
	// Team is team mode (serve --team): people with roles and their keys, the admin API, the
	// audit log, lanes routed by the model field; every request needs a key. The first start
	// creates the first admin (team.go).
	Team bool
	// AdminPasswordFile holds the first admin's password (--admin-password-file); "" makes a
	// one-time random one, printed once.
	AdminPasswordFile string
	// BookingApproval makes members' bookings wait for an admin (--booking-approval);
	// BookingMaxLength bounds one booking and BookingHoursPerWeek a person's booked hours per
	// UTC week (0: no limit).
	BookingApproval     bool
	BookingMaxLength    time.Duration
	BookingHoursPerWeek float64
	// QuotaDailyTokens and QuotaMonthlyTokens are a person's token quotas unless they have
	// their own (0: none); QuotaCachedFraction what a cached prompt token counts for;
	// PersonConcurrency the model requests one person may have in flight (0: no limit).
	// Team mode (team_quota.go).
	QuotaDailyTokens, QuotaMonthlyTokens int64
	QuotaCachedFraction                  float64
	PersonConcurrency                    int
	// Web is the --web address: the browser playground's loopback listener ("" for none).
	Web string
	// CORSOrigins are browser origins answered besides the localhost ones (--cors-origins).
	CORSOrigins []string
	// RateLimitIP is the requests a minute one client address may send (--rate-limit-ip);
	// 0 is off, -1 (the default) is off on a loopback Host and DefaultRateLimitIP elsewhere.
	RateLimitIP int
	// AllowBatchInvariant lets requests ask for a lane that ticks alone
	// (--http-allow-batch-invariant).
	AllowBatchInvariant bool
	// NonstreamKeepalive pads admitted non-streaming generations with a space at this interval
	// (--nonstream-keepalive); 0 is off.
	NonstreamKeepalive time.Duration
	// QoSReserve is the lanes of each model background work leaves free (--qos-reserve).
	QoSReserve int
	// PersonReserve is the lanes of each model one person leaves free for others in team mode
	// (--person-reserve).
	PersonReserve int
	// WorkerCommand starts a worker process: the program and its leading arguments.
	WorkerCommand []string
	// WorkerEnv is added to the worker's environment.
	WorkerEnv []string
	// WorkerLog receives the workers' stderr (llama.cpp's log); nil discards it.
	WorkerLog io.Writer
	// RuntimeLog keeps the recent log lines for the web API's runtime log (team mode's serve
	// sets it, app/runlog.go); nil: none.
	RuntimeLog *runlog.Log
	// NewRunner, when set, may make a catalog model's runner in place of a worker process
	// (nil: the worker). A test seam: it serves a scripted engine through the whole server.
	// Production leaves it nil.
	NewRunner func(e *models.Entry, vocabOnly bool) models.Runner
}

// DefaultConfig is the configuration before flags.
func DefaultConfig() Config {
	return Config{
		Host:                "127.0.0.1",
		Port:                8453,
		Parallel:            4,
		Speculative:         defaultSpeculative,
		Queue:               64,
		CompletionBurst:     20,
		RateLimitIP:         -1,
		QoSReserve:          1,
		PersonReserve:       1,
		QuotaCachedFraction: quota.DefaultCachedFraction,
		RecordsDays:         30,
		FilesMaxBytes:       10_000_000_000,
		KVDiskMax:           llamacpp.DefaultKVDiskMax,
		CompletionRate:      10,
		KeepAlive:           5 * time.Second,
		WriteTimeout:        30 * time.Second,
		ModelKeepAlive:      5 * time.Minute,
		HFEndpoint:          cmp.Or(os.Getenv("HF_ENDPOINT"), defaultHFEndpoint),
		HFToken:             os.Getenv("HF_TOKEN"),
		DataDir:             defaultDataDir(),
		WorkerCommand:       selfCommand("worker"),
	}
}

// selfCommand runs this same binary with a subcommand.
func selfCommand(sub string) []string {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return []string{exe, sub}
}

// teamFlags declares serve's team-mode flags (team.go).
func teamFlags(fs *pflag.FlagSet, cfg *Config) {
	fs.BoolVar(&cfg.Team, "team", cfg.Team, "team mode: people with roles and their sk-ss- keys (superfluid users), lanes routed by the model field (superfluid lanes), the admin API under /v1/admin, an audit log; every request needs a key")
	fs.BoolVar(&cfg.BookingApproval, "booking-approval", cfg.BookingApproval, "with --team: members' bookings wait as pending until an admin approves or rejects them")
	fs.DurationVar(&cfg.BookingMaxLength, "booking-max-length", cfg.BookingMaxLength, "with --team: the longest booking (e.g. 8h; 0 for no limit)")
	fs.Float64Var(&cfg.BookingHoursPerWeek, "booking-hours-per-week", cfg.BookingHoursPerWeek, "with --team: the hours one person may book per UTC week (0 for no limit)")
	quotaFlags(fs, cfg)
	fs.StringVar(&cfg.AdminPasswordFile, "admin-password-file", cfg.AdminPasswordFile, "with --team: a file whose first line is the first admin's password (default: a one-time random password, printed once)")
}
