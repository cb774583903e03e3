package app

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/tray"
)

// TestDesktopKeys: the desktop controller refuses to move the server onto the network
// without a key, creates a key (which works at once), lists it without the key itself and
// revokes it (refused at once).
func TestDesktopKeys(t *testing.T) {
	cfg := testConfig(t, "")
	_, c := openController(t, cfg)
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	if err := c.SetAddress("0.0.0.0", port); err != nil {
		t.Fatal(err)
	}
	if err := c.StartServer(); err == nil || c.Server().Running || !strings.Contains(c.Server().Err, "Keys tab") {
		t.Fatalf("network start without a key: %v %+v", err, c.Server())
	}
	if keys, err := c.Keys(); err != nil || len(keys) != 0 {
		t.Fatalf("keys %+v %v", keys, err)
	}
	key, err := c.CreateKey(tray.NewAPIKey{Name: "phone", Models: []string{"stories260K"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateKey(tray.NewAPIKey{Name: "phone"}); err == nil {
		t.Fatal("a second key named phone")
	}
	keys, _ := c.Keys()
	if len(keys) != 1 || keys[0].Name != "phone" || keys[0].Source != "store" || keys[0].Created == "" ||
		!strings.HasPrefix(key, keys[0].Prefix) || keys[0].Prefix == key {
		t.Fatalf("keys %+v", keys)
	}
	if err := c.StartServer(); err != nil || !c.Server().Running {
		t.Fatalf("network start with a key: %v %+v", err, c.Server())
	}
	url := "http://" + net.JoinHostPort("127.0.0.1", c.Server().Address[strings.LastIndex(c.Server().Address, ":")+1:])
	ctx := context.Background()
	if _, err := keyClient(url, key).Models.List(ctx); err != nil {
		t.Fatalf("the new key: %v", err)
	}
	if err := c.RevokeKey(keys[0].ID); err != nil {
		t.Fatal(err)
	}
	var e *openai.Error
	if _, err := keyClient(url, key).Models.List(ctx); !errors.As(err, &e) || e.StatusCode != 401 {
		t.Fatalf("the revoked key: %v", err)
	}
	// No key left, still on the network: every request is refused, none is open.
	if _, err := keyClient(url, "").Models.List(ctx); !errors.As(err, &e) || e.StatusCode != 401 {
		t.Fatalf("no key on a network server: %v", err)
	}
}
