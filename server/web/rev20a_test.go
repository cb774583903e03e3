package web_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/runlog"
	"github.com/superfluid/superfluid/server/web"
)

// rev20a: Locked, Verify and Fail are three steps with nothing holding them together, so
// sign-ins sent at once all pass the lockout check before any failure is counted: the
// account's limit of 10 guesses within 15 minutes becomes as many as can be sent in parallel.
func TestRev20aLockoutHoldsUnderConcurrentGuesses(t *testing.T) {
	tt := newTestTeam(t)
	const n = 60
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each from its own address: only the account's limit (10) applies.
			r := login(t, tt, "bob", fmt.Sprintf("wrong%d", i), fmt.Sprintf("10.1.%d.%d", i/250, i%250+1))
			statuses[i] = r.status
		}()
	}
	wg.Wait()
	tried := 0
	for _, s := range statuses {
		if s == 401 { // the password was checked
			tried++
		}
	}
	if tried > 10 {
		t.Errorf("%d of %d concurrent guesses for one account had their password checked; the lockout allows 10", tried, n)
	}
}

// rev20a: a key an admin scoped for a member (one model, 1 request a minute) mints, through
// POST /api/keys, an unscoped key of the same person: every limit the admin set is shed. Before
// the web API a member's key could not manage keys at all (/v1/keys is admin-only).
func TestRev20aScopedKeyCannotMintUnscopedKey(t *testing.T) {
	tt := newTestTeam(t)
	admin := tt.signIn(t, "root", "password0")
	res := admin.do("POST", "/api/admin/keys", `{"name": "bob-scoped", "user": "bob", "models": ["alpha"], "rpm": 1, "tpm": 10, "concurrency": 1}`)
	if res.status != 201 {
		t.Fatalf("admin creates bob's scoped key: %d %s", res.status, res.body)
	}
	scoped, _ := res.obj["key"].(string)
	res = tt.withKey(t, scoped, "POST", "/api/keys", `{"name": "free"}`)
	if res.status == 201 {
		t.Errorf("a scoped key minted an unscoped key: %s", res.body)
	}
}

// rev20a: an admin following the live log holds the server's graceful shutdown for its whole
// deadline: the stream ends only when its request's context does, and http.Server.Shutdown
// cancels no request context; it waits for the handler, which waits for the next line forever.
// (App.Serve gives Shutdown 10 s and then returns its error with the stream still open.)
func TestRev20aLogStreamDoesNotHoldShutdown(t *testing.T) {
	base := newTestTeam(t)
	log := runlog.New(runlog.Config{})
	devices := []lanes.Device{{Name: "cpu"}}
	q := quota.New(quota.Config{Store: base.Store, Now: base.Clock.Now})
	api := web.New(web.Config{People: base.People, Keys: base.Keys, Bookings: base.Bookings, Lanes: base.Lanes, Devices: devices,
		Quota: q, Core: base.Core, Store: base.Store, Sessions: base.Sessions, Now: base.Clock.Now, RuntimeLog: log})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: server.New(server.Config{Keys: base.Keys, People: base.People, Lanes: base.Lanes, Devices: devices,
		Bookings: base.Bookings, Quota: q, Web: api}, base.Core)}
	srv.RegisterOnShutdown(api.Shutdown)
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	req, _ := http.NewRequest("GET", "http://"+l.Addr().String()+"/api/admin/runtime/log/stream", nil)
	req.Header.Set("Authorization", "Bearer "+base.RootKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("stream: %d", res.StatusCode)
	}
	go io.Copy(io.Discard, res.Body)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("shutdown with a log follower: %v after %s (the stream kept the server up)", err, time.Since(start).Round(time.Millisecond))
	}
}

// rev20a: a disabled person's key reaches the signed-in routes?
func TestRev20aDisabledPersonsKey(t *testing.T) {
	tt := newTestTeam(t)
	admin := tt.signIn(t, "root", "password0")
	if r := admin.do("PATCH", "/api/admin/users/bob", `{"state": "disabled"}`); r.status != 200 {
		t.Fatalf("disable bob: %d %s", r.status, r.body)
	}
	time.Sleep(10 * time.Millisecond)
	if r := tt.withKey(t, tt.BobKey, "POST", "/api/keys", `{"name": "after"}`); r.status == 201 {
		t.Errorf("a disabled person's key made a key: %s", r.body)
	}
	if r := tt.withKey(t, tt.BobKey, "GET", "/api/auth/me", ""); r.status == 200 {
		t.Errorf("a disabled person's key is signed in: %s", r.body)
	}
}
