package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// bookingServer is a real HTTP server with bookings and three stored keys: alice and bob
// (members) and root (an admin).
type bookingServer struct {
	srv              *httptest.Server
	audited          []string
	mu               sync.Mutex
	alice, bob, root string
}

func newBookingServer(t *testing.T, p bookings.Policy) *bookingServer {
	t.Helper()
	ctx := context.Background()
	st := servertest.Store(t)
	keys, err := auth.New(ctx, auth.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	bs := &bookingServer{}
	for name, key := range map[string]*string{"alice": &bs.alice, "bob": &bs.bob, "root": &bs.root} {
		if *key, _, err = keys.Create(ctx, auth.NewKey{Name: name, Admin: name == "root"}); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := bookings.New(bookings.Config{Store: st, Policy: p, Audit: func(ctx context.Context, action, target string, _ any) error {
		bs.mu.Lock()
		defer bs.mu.Unlock()
		bs.audited = append(bs.audited, action+" by "+bookings.PersonFrom(ctx).Name)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	bs.srv = httptest.NewServer(server.New(server.Config{Keys: keys, Bookings: svc}, core.New(core.Config{}, st)))
	t.Cleanup(bs.srv.Close)
	return bs
}

// do sends a request with key and decodes the JSON answer.
func (bs *bookingServer) do(t *testing.T, key, method, path, body string) (*http.Response, map[string]any) {
	t.Helper()
	var headers []string
	if key != "" {
		headers = []string{"Authorization", "Bearer " + key}
	}
	res, b := servertest.Do(t, method, bs.srv.URL+path, body, headers...)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: %d %s: not JSON", method, path, res.StatusCode, b)
	}
	return res, out
}

// code is the OpenAI error's code ("" when none).
func code(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// message is an error body's message.
func message(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

func window(from, to time.Duration) string {
	now := time.Now()
	return fmt.Sprintf(`"start": %q, "end": %q`, now.Add(from).Format(time.RFC3339), now.Add(to).Format(time.RFC3339))
}

func TestBookingRoutes(t *testing.T) {
	bs := newBookingServer(t, bookings.Policy{NeedsApproval: true, MaxLength: 3 * time.Hour, MaxHoursPerWeek: 3.5})
	h := time.Hour
	if res, body := bs.do(t, "", "GET", "/v1/bookings", ""); res.StatusCode != 401 || (code(body) != "missing_api_key" && code(body) != "invalid_api_key") { // the spec's two; team mode's guard says missing
		t.Errorf("no key: %d %v, want 401", res.StatusCode, body)
	}
	res, b := bs.do(t, bs.alice, "POST", "/v1/bookings", `{"lane": "a", "model": "qwen3", `+window(h, 2*h)+`}`)
	if res.StatusCode != 201 || b["state"] != "pending" || b["person"] != "alice" || b["lane"] != "a" || b["device"] != nil {
		t.Fatalf("book: %d %v", res.StatusCode, b)
	}
	id := b["id"].(string)
	for _, tt := range []struct {
		name, key, body string
		status          int
		code            string
	}{
		{"overlap", bs.bob, `{"lane": "a", ` + window(90*time.Minute, 3*h) + `}`, 409, "booking_conflict"},
		{"neither lane nor device", bs.bob, `{"device": "", "lane": "", ` + window(90*time.Minute, 3*h) + `}`, 400, ""},
		{"end before start", bs.bob, `{"lane": "b", ` + window(2*h, h) + `}`, 400, ""},
		{"in the past", bs.bob, `{"lane": "b", ` + window(-3*h, -2*h) + `}`, 400, ""},
		{"too long", bs.bob, `{"lane": "b", ` + window(h, 5*h) + `}`, 400, ""},
		{"bad time", bs.bob, `{"lane": "b", "start": "tomorrow", "end": "+2h"}`, 400, ""},
		{"no end", bs.bob, `{"lane": "b", "start": "now"}`, 400, ""},
		{"unknown field", bs.bob, `{"lane": "b", "from": "now", "end": "+2h"}`, 400, ""},
		{"over the week's hours", bs.alice, `{"lane": "b", ` + window(3*h, 6*h) + `}`, 429, "quota_exceeded"},
	} {
		if tt.status == 429 && store.WeekStart(time.Now().Add(h)) != store.WeekStart(time.Now().Add(6*h)) {
			continue // the two bookings fall in different weeks (run late on a Sunday)
		}
		res, body := bs.do(t, tt.key, "POST", "/v1/bookings", tt.body)
		if res.StatusCode != tt.status || code(body) != tt.code {
			t.Errorf("%s: %d %v, want %d %q", tt.name, res.StatusCode, body, tt.status, tt.code)
		}
		if tt.status == 429 {
			if ra, _ := strconv.Atoi(res.Header.Get("Retry-After")); ra <= 0 {
				t.Errorf("%s: Retry-After %q, want the seconds until the week resets", tt.name, res.Header.Get("Retry-After"))
			}
		}
	}
	// "now" and "+2h" work; Unix seconds too.
	if res, body := bs.do(t, bs.bob, "POST", "/v1/bookings", `{"lane": "b", "start": "now", "end": "+30m"}`); res.StatusCode != 201 {
		t.Errorf("now/+30m: %d %v", res.StatusCode, body)
	}
	start := time.Now().Add(10 * h).Unix()
	if res, body := bs.do(t, bs.bob, "POST", "/v1/bookings", fmt.Sprintf(`{"device": "gpu0", "start": %d, "end": %d}`, start, start+60)); res.StatusCode != 201 {
		t.Errorf("unix seconds: %d %v", res.StatusCode, body)
	}

	// Approval: only an admin, never oneself as a member.
	if res, body := bs.do(t, bs.alice, "POST", "/v1/admin/bookings/"+id+"/approve", ""); res.StatusCode != 403 || code(body) != "admin_required" {
		t.Errorf("self-approval: %d %v, want 403 admin_required", res.StatusCode, body)
	}
	if res, body := bs.do(t, bs.root, "POST", "/v1/admin/bookings/"+id+"/approve", ""); res.StatusCode != 200 || body["state"] != "approved" || body["decided_by"] != "root" {
		t.Errorf("approve: %d %v", res.StatusCode, body)
	}
	if res, body := bs.do(t, bs.root, "POST", "/v1/admin/bookings/"+id+"/reject", ""); res.StatusCode != 409 || code(body) != "invalid_booking_state" {
		t.Errorf("reject an approved booking: %d %v", res.StatusCode, body)
	}
	if res, body := bs.do(t, bs.root, "POST", "/v1/admin/bookings/bk-nope/approve", ""); res.StatusCode != 404 || code(body) != "booking_not_found" {
		t.Errorf("approve unknown: %d %v", res.StatusCode, body)
	}

	// Lists: a member's own; everyone's for admins.
	if _, body := bs.do(t, bs.bob, "GET", "/v1/bookings", ""); len(body["data"].([]any)) != 2 {
		t.Errorf("bob's bookings: %v, want his 2", body)
	}
	if res, body := bs.do(t, bs.bob, "GET", "/v1/admin/bookings", ""); res.StatusCode != 403 || code(body) != "admin_required" {
		t.Errorf("member on the admin list: %d %v", res.StatusCode, body)
	}
	if res, body := bs.do(t, bs.root, "GET", "/v1/admin/bookings?state=bogus", ""); res.StatusCode != 400 || !strings.Contains(message(body), "bogus") {
		t.Errorf("unknown state: %d %v, want 400", res.StatusCode, body)
	}
	if _, body := bs.do(t, bs.root, "GET", "/v1/admin/bookings?state=approved", ""); len(body["data"].([]any)) != 1 {
		t.Errorf("approved bookings: %v, want alice's", body)
	}

	// Cancel: own only.
	if res, body := bs.do(t, bs.bob, "DELETE", "/v1/bookings/"+id, ""); res.StatusCode != 404 || code(body) != "booking_not_found" {
		t.Errorf("bob cancels alice's: %d %v, want 404", res.StatusCode, body)
	}
	if res, body := bs.do(t, bs.alice, "DELETE", "/v1/bookings/"+id, ""); res.StatusCode != 200 || body["state"] != "cancelled" {
		t.Errorf("alice cancels: %d %v", res.StatusCode, body)
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	want := []string{"booking.create by alice", "booking.create by bob", "booking.create by bob", "booking.approve by root", "booking.cancel by alice"}
	if fmt.Sprint(bs.audited) != fmt.Sprint(want) {
		t.Errorf("audited %v, want %v", bs.audited, want)
	}
}

// TestBookingRoutesRace books one window from many clients at once: exactly one gets 201, the
// others 409 booking_conflict.
func TestBookingRoutesRace(t *testing.T) {
	bs := newBookingServer(t, bookings.Policy{})
	body := `{"device": "gpu0", ` + window(time.Hour, 2*time.Hour) + `}`
	const n = 12
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []string{bs.alice, bs.bob, bs.root}[i%3]
			req, _ := http.NewRequest("POST", bs.srv.URL+"/v1/bookings", stringsReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
			statuses[i] = res.StatusCode
		}()
	}
	wg.Wait()
	created := 0
	for _, s := range statuses {
		switch s {
		case 201:
			created++
		case 409:
		default:
			t.Errorf("status %d, want 201 or 409", s)
		}
	}
	if created != 1 {
		t.Errorf("%d bookings created (%v), want exactly 1", created, statuses)
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

// TestBookingFarFuture books past year 9999 in Unix seconds: the store's time text would stop
// sorting as time (and stop parsing), so the window is refused (400) and the lists keep working.
func TestBookingFarFuture(t *testing.T) {
	bs := newBookingServer(t, bookings.Policy{})
	start := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	res, body := bs.do(t, bs.bob, "POST", "/v1/bookings", fmt.Sprintf(`{"lane": "a", "start": %d, "end": %d}`, start, start+3600))
	if res.StatusCode != 400 || message(body) == "" {
		t.Errorf("a booking in year 10000: %d %v, want 400 with a message", res.StatusCode, body)
	}
	for _, key := range []string{bs.bob, bs.root} {
		if res, body := bs.do(t, key, "GET", "/v1/bookings", ""); res.StatusCode != 200 {
			t.Errorf("list after it: %d %v", res.StatusCode, body)
		}
	}
	if res, body := bs.do(t, bs.root, "GET", "/v1/admin/bookings", ""); res.StatusCode != 200 {
		t.Errorf("admin list after it: %d %v", res.StatusCode, body)
	}
}
