package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/store"
)

// accessFlags declares the flags of who may use the server: keys, the non-loopback guard and
// CORS (serve, bench and the desktop app).
func accessFlags(fs *pflag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.APIKey, "api-key", cfg.APIKey, "an admin API key every request must send (Authorization: Bearer KEY or x-api-key: KEY); /health needs none; default $"+apiKeyEnv)
	fs.StringVar(&cfg.KeyPolicy, "key-policy", cfg.KeyPolicy, `a JSON file of API keys with names, admin, models, qos, rpm, tpm, concurrency and origins: {"keys": [{"name": "alice", "key": "sk-sf-...", "admin": true}]}`)
	fs.BoolVar(&cfg.InsecureOpen, "insecure-open", cfg.InsecureOpen, "serve on a non-loopback --host without any API key (anyone who can reach the address can use the server)")
	fs.Var(originsFlag{&cfg.CORSOrigins}, "cors-origins", `browser origins allowed besides localhost's, comma-separated: "https://app.example.com,http://10.0.0.5:*" ("*" allows every origin)`)
}

// originsFlag is a comma-separated list of origin patterns; it may be repeated.
type originsFlag struct{ list *[]string }

func (f originsFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f originsFlag) Set(v string) error {
	for _, o := range strings.Split(v, ",") {
		p, err := auth.CheckOrigin(o)
		if err != nil {
			return err
		}
		*f.list = append(*f.list, p)
	}
	return nil
}

func (f originsFlag) Type() string { return "origins" }

// apiKeyEnv holds the --api-key of a server started without the flag: how a command lane hands
// the superfluid it runs its key (runtime/supervise.APIKeyEnv), off the command line.
const apiKeyEnv = "SUPERFLUID_API_KEY"

// openKeys builds the keyring: --api-key (or $SUPERFLUID_API_KEY), the --key-policy file and
// the keys stored in st.
func openKeys(cfg Config, st *store.Store) (*auth.Keyring, error) {
	var keys []auth.Key
	if apiKey := cmp.Or(cfg.APIKey, os.Getenv(apiKeyEnv)); apiKey != "" {
		k, err := auth.APIKey(apiKey)
		if err != nil {
			return nil, &UsageError{err.Error()}
		}
		keys = append(keys, k)
	}
	if cfg.KeyPolicy != "" {
		policy, err := auth.LoadPolicy(cfg.KeyPolicy)
		if err != nil {
			return nil, &UsageError{err.Error()}
		}
		keys = append(keys, policy...)
	}
	k, err := auth.New(context.Background(), auth.Config{Keys: keys, Store: st})
	if errors.Is(err, auth.ErrInvalidKey) {
		return nil, &UsageError{"--api-key and --key-policy: " + err.Error()}
	}
	return k, err
}

// corsOrigins are the origins CORS answers: localhost's and --cors-origins.
func corsOrigins(cfg Config) []string {
	return append(append([]string(nil), auth.DefaultOrigins...), cfg.CORSOrigins...)
}

// expose prepares the server to listen on host: the Host check follows it, and a
// non-loopback host needs API keys. Without any key it refuses, unless --insecure-open.
// --trusted-proxies always needs a key (--insecure-open or not): behind a reverse proxy every
// client arrives from the proxy's address, and a proxy on this machine would make each of them
// a loopback admin. Keys stay required there even if every key is revoked later, and always in
// team mode.
func (a *App) expose(host string) error {
	loopback := auth.LoopbackHost(host)
	proxied := len(a.cfg.TrustedProxies) > 0
	a.bind.Set(host)
	// Team mode needs a key for every request wherever it listens (startTeam), also when the
	// desktop starts its server after startTeam.
	a.keys.SetRequired(a.people != nil || proxied || !loopback && !a.cfg.InsecureOpen)
	if proxied && !a.keys.HasKeys() {
		return &UsageError{"refusing --trusted-proxies without an API key: behind a reverse proxy every client arrives from the proxy's address, " +
			"so without keys a proxy on this machine would make every client an admin. Pass --api-key KEY or --key-policy FILE, " +
			"or create a key first (superfluid keys create NAME --admin); or drop --trusted-proxies"}
	}
	if loopback || a.cfg.InsecureOpen || a.keys.HasKeys() {
		return nil
	}
	shown := host
	if shown == "" {
		shown = "every address"
	}
	return &UsageError{fmt.Sprintf("refusing to serve on %s without an API key: anyone who can reach it could use the server and manage its models. "+
		"Pass --api-key KEY or --key-policy FILE, or create a key first (superfluid keys create NAME --admin); "+
		"or pass --insecure-open to serve there without keys; or serve on 127.0.0.1 (this machine only)", shown)}
}

// exposureNote is the line serve prints about who may use the server.
func (a *App) exposureNote(w io.Writer, l net.Addr) {
	host, _, _ := net.SplitHostPort(l.String())
	switch {
	case a.keys.Enabled():
		fmt.Fprintf(w, "superfluid: requests need an API key (%d configured or stored); /health needs none\n", a.keys.Size())
	case !auth.LoopbackHost(host):
		fmt.Fprintf(w, "superfluid: WARNING: serving on %s without API keys (--insecure-open): anyone who can reach it can use the server\n", l)
	}
}

// Keys is the keyring (API keys).
func (a *App) Keys() *auth.Keyring { return a.keys }

// newBind is the server's view of the host it listens on.
func newBind(cfg Config) *server.Bind { return server.NewBind(cfg.Host) }
