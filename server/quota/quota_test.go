package quota

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/store"
)

type fixture struct {
	t   *testing.T
	st  *store.Store
	svc *Service
	now time.Time
	n   int
}

func newFixture(t *testing.T, p Policy) *fixture {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{t: t, st: st, now: time.Date(2026, 12, 10, 21, 0, 0, 0, time.UTC)}
	f.svc = New(Config{Store: st, Policy: p, Now: func() time.Time { return f.now }})
	return f
}

var (
	alice    = &auth.Identity{ID: "key-a1", Name: "alice-key", Person: &auth.Person{ID: "person-a", Name: "alice"}}
	aliceTwo = &auth.Identity{ID: "key-a2", Name: "alice-laptop", Person: &auth.Person{ID: "person-a", Name: "alice"}}
	bob      = &auth.Identity{ID: "key-b1", Name: "bob-key", Person: &auth.Person{ID: "person-b", Name: "bob"}}
	ctx      = context.Background()
)

// spend records a finished request of id (committed at once), at the fixture's clock.
func (f *fixture) spend(id *auth.Identity, prompt, cached, completion int) {
	f.t.Helper()
	f.n++
	err := f.st.RecordRequest(ctx, store.RequestRecord{ID: "req-" + string(rune('a'+f.n)) + time.Now().Format("150405.000000000"),
		KeyID: id.ID, KeyName: id.Name, PersonID: id.Person.ID, PersonName: id.Person.Name,
		PromptTokens: prompt, CachedTokens: cached, CompletionTokens: completion, CreatedAt: f.now})
	if err != nil {
		f.t.Fatal(err)
	}
}

// admit admits a request of id, returning its done, or the refusal.
func (f *fixture) admit(id *auth.Identity, m Meter) (func(), *llm.StatusError) {
	f.t.Helper()
	done, err := f.svc.Admit(ctx, id, m)
	if err == nil {
		return done, nil
	}
	var se *llm.StatusError
	if !errors.As(err, &se) {
		f.t.Fatalf("admit: %v, want a StatusError", err)
	}
	return nil, se
}

func (f *fixture) set(o Owner, daily, monthly Value) {
	f.t.Helper()
	if _, _, err := f.svc.Set(ctx, o, Change{Daily: daily, Monthly: monthly}); err != nil {
		f.t.Fatal(err)
	}
}

// TestExhausted: at or over the daily quota the next request is 429 quota_exceeded, with
// Retry-After until the next UTC midnight and the reset named in the message; the monthly
// quota, when also spent, resets later and wins.
func TestExhausted(t *testing.T) {
	f := newFixture(t, Policy{DailyTokens: 100})
	f.spend(alice, 60, 0, 39)
	done, se := f.admit(alice, nil)
	if se != nil {
		t.Fatalf("99 of 100 spent: refused %v", se)
	}
	done()
	f.svc.Settled()
	f.spend(alice, 0, 0, 1)
	_, se = f.admit(alice, nil)
	if se == nil || se.Status != 429 || se.Code != "quota_exceeded" {
		t.Fatalf("100 of 100 spent: %v, want 429 quota_exceeded", se)
	}
	if se.RetryAfter != 3*time.Hour || !strings.Contains(se.Message, "2026-12-11 00:00 UTC") || !strings.Contains(se.Message, "alice") {
		t.Errorf("refusal: retry %s, %q; want 3h and the reset at midnight", se.RetryAfter, se.Message)
	}
	if _, se := f.admit(bob, nil); se != nil {
		t.Errorf("bob is refused for alice's spending: %v", se)
	}
	f.set(Owner{store.QuotaPerson, "person-a"}, Unset(), Tokens(100))
	_, se = f.admit(alice, nil)
	if se == nil || se.RetryAfter != 21*24*time.Hour+3*time.Hour || !strings.Contains(se.Message, "2027-01-01 00:00 UTC") {
		t.Errorf("day and month spent: %v, want the month's reset", se)
	}
	f.set(Owner{store.QuotaPerson, "person-a"}, Tokens(0), Tokens(0))
	if _, se := f.admit(alice, nil); se != nil {
		t.Errorf("alice exempted from the default (0: unlimited): %v", se)
	}
}

// TestKeyQuotaIndependent: a key's quota counts that key's requests only; the person's counts
// all of their keys'; either one spent refuses.
func TestKeyQuotaIndependent(t *testing.T) {
	f := newFixture(t, Policy{})
	f.set(Owner{store.QuotaKey, "key-a1"}, Tokens(50), Unset())
	f.spend(aliceTwo, 500, 0, 0)
	if _, se := f.admit(alice, nil); se != nil {
		t.Fatalf("alice's other key spent 500: key-a1 (50 a day, 0 spent) refused: %v", se)
	}
	f.svc.Settled()
	f.spend(alice, 50, 0, 0)
	_, se := f.admit(alice, nil)
	if se == nil || se.Code != "quota_exceeded" || !strings.Contains(se.Message, `the API key "alice-key"`) {
		t.Fatalf("key-a1 spent its 50: %v", se)
	}
	if _, se := f.admit(aliceTwo, nil); se != nil {
		t.Errorf("alice's other key, no quota of its own, refused: %v", se)
	}
	f.set(Owner{store.QuotaPerson, "person-a"}, Unset(), Tokens(500))
	if _, se := f.admit(aliceTwo, nil); se == nil || !strings.Contains(se.Message, "alice may use 500 tokens a month") {
		t.Errorf("alice's 500 a month spent over both keys: %v", se)
	}
}

// TestCachedFraction: cached prompt tokens cost the policy's fraction.
func TestCachedFraction(t *testing.T) {
	f := newFixture(t, Policy{DailyTokens: 100, CachedFraction: 0.1})
	f.spend(alice, 900, 850, 40) // 50 uncached, 40 completion, 850 cached at 0.1: 175
	st, err := f.svc.StatusOf(ctx, Owner{store.QuotaPerson, "person-a"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Daily.Used != 50+40+85 || st.Daily.Remaining() != 0 || st.Monthly.Remaining() != -1 {
		t.Fatalf("status %+v, want 175 used (850 cached at 0.1), nothing left, no monthly quota", st)
	}
	g := newFixture(t, Policy{DailyTokens: 200, CachedFraction: 0.1})
	g.spend(alice, 900, 850, 40)
	if _, se := g.admit(alice, nil); se != nil {
		t.Errorf("175 of 200 spent: refused %v", se)
	}
	h := newFixture(t, Policy{DailyTokens: 200, CachedFraction: 1})
	h.spend(alice, 900, 850, 40)
	if _, se := h.admit(alice, nil); se == nil {
		t.Error("940 spent at fraction 1 of 200: admitted")
	}
}

// TestDayRollover: a quota spent today admits again at the next UTC midnight; the month
// keeps counting.
func TestDayRollover(t *testing.T) {
	f := newFixture(t, Policy{DailyTokens: 100, MonthlyTokens: 250})
	f.spend(alice, 100, 0, 0)
	if _, se := f.admit(alice, nil); se == nil {
		t.Fatal("day spent: admitted")
	}
	f.now = time.Date(2026, 12, 11, 0, 0, 0, 0, time.UTC)
	st, _ := f.svc.StatusOf(ctx, Owner{store.QuotaPerson, "person-a"})
	if st.Daily.Used != 0 || st.Monthly.Used != 100 || !st.Daily.ResetsAt.Equal(time.Date(2026, 12, 12, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("next day: %+v", st)
	}
	if _, se := f.admit(alice, nil); se != nil {
		t.Fatalf("next day: refused %v", se)
	}
	f.svc.Settled()
	f.spend(alice, 100, 0, 0)
	f.now = f.now.AddDate(0, 0, 1)
	f.spend(alice, 50, 0, 0)
	_, se := f.admit(alice, nil)
	if se == nil || !strings.Contains(se.Message, "a month") || !strings.Contains(se.Message, "2027-01-01") {
		t.Fatalf("250 spent this month: %v", se)
	}
	f.now = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, se := f.admit(alice, nil); se != nil {
		t.Errorf("a new month: refused %v", se)
	}
}

type meter struct{ tokens, cached atomic.Int64 }

func (m *meter) Tokens() int64 { return m.tokens.Load() }
func (m *meter) Cached() int64 { return m.cached.Load() }

// TestConcurrentAdmissions: with R tokens left at most R requests are in flight (each holds
// one); a request that ended counts its whole cost for the next admission before its record is
// committed, and its hold goes once the record is.
func TestConcurrentAdmissions(t *testing.T) {
	f := newFixture(t, Policy{DailyTokens: 100})
	f.spend(alice, 97, 0, 0)
	var dones []func()
	var meters []*meter
	for range 3 {
		m := &meter{}
		done, se := f.admit(alice, m)
		if se != nil {
			t.Fatalf("3 tokens left, admission %d refused: %v", len(dones)+1, se)
		}
		dones, meters = append(dones, done), append(meters, m)
	}
	if _, se := f.admit(aliceTwo, nil); se == nil {
		t.Fatal("3 tokens left and 3 requests in flight: a 4th admitted")
	}
	// The first ends having spent 2 tokens; its record is not written yet.
	meters[0].tokens.Store(2)
	st, _ := f.svc.StatusOf(ctx, Owner{store.QuotaPerson, "person-a"})
	if st.Daily.Used != 97+2+1+1 {
		t.Fatalf("used %d, want 101: 97 recorded, 2 ended, 1 held by each of the two running", st.Daily.Used)
	}
	// Only when done is called and the record committed does the hold go.
	if err := f.st.RecordRequest(ctx, store.RequestRecord{ID: "ended", PersonID: "person-a", KeyID: "key-a1", PromptTokens: 2, CreatedAt: f.now}); err != nil {
		t.Fatal(err)
	}
	dones[0]()
	dones[0]() // twice is once
	dones[1]()
	dones[2]()
	f.svc.Settled()
	st, _ = f.svc.StatusOf(ctx, Owner{store.QuotaPerson, "person-a"})
	if st.Daily.Used != 99 {
		t.Fatalf("all settled: used %d, want 99", st.Daily.Used)
	}
	if _, se := f.admit(alice, nil); se != nil {
		t.Errorf("99 of 100: refused %v", se)
	}
}

// TestSetAndParse: bad quotas are ErrInvalid; Detail names what changed.
func TestSetAndParse(t *testing.T) {
	f := newFixture(t, Policy{})
	for _, s := range []string{"-1", "ten", "1.5", ""} {
		if _, err := ParseValue(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseValue(%q): %v, want ErrInvalid", s, err)
		}
	}
	if v, err := ParseValue("default"); err != nil || !v.Given || v.Tokens != nil {
		t.Errorf("default: %+v %v", v, err)
	}
	if v, err := ParseValue("1_000"); err != nil || *v.Tokens != 1000 {
		t.Errorf("1_000: %+v %v", v, err)
	}
	if _, _, err := f.svc.Set(ctx, Owner{store.QuotaKey, "k"}, Change{Daily: Tokens(-5)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Set -5: %v", err)
	}
	before, after, err := f.svc.Set(ctx, Owner{store.QuotaKey, "k"}, Change{Daily: Tokens(5)})
	if err != nil {
		t.Fatal(err)
	}
	d := Detail(before, after)
	if _, ok := d["daily_tokens"]; !ok || len(d) != 1 {
		t.Errorf("detail %v", d)
	}
	if err := (Policy{CachedFraction: 1.5}).Check(); !errors.Is(err, ErrInvalid) {
		t.Errorf("fraction 1.5: %v", err)
	}
}

// gatedSink holds the records writer until open is closed: records are queued, not
// committed.
type gatedSink struct {
	next store.RequestSink
	open chan struct{}
}

func (g gatedSink) RecordRequests(ctx context.Context, rs []store.RequestRecord) error {
	<-g.open
	return g.next.RecordRequests(ctx, rs)
}

// TestHoldUntilCommitted: a request that ended keeps holding its cost while its record waits
// in the store's queue (the disk is slow), so the next request is refused on it; once the
// record is committed the hold goes and the record counts instead, once.
func TestHoldUntilCommitted(t *testing.T) {
	open := make(chan struct{})
	st, err := store.OpenWith(filepath.Join(t.TempDir(), "db.sqlite"), store.Options{
		WrapRecordSink: func(next store.RequestSink) store.RequestSink { return gatedSink{next, open} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var opened sync.Once
	release := func() { opened.Do(func() { close(open) }) }
	t.Cleanup(release) // before Close, which waits for the writer
	svc := New(Config{Store: st, Policy: Policy{DailyTokens: 100}})
	m := &meter{}
	done, err := svc.Admit(ctx, alice, m)
	if err != nil {
		t.Fatal(err)
	}
	m.tokens.Store(120) // the request ends past the quota; its record is queued, not written
	st.Record(store.RequestRecord{ID: "r1", KeyID: alice.ID, PersonID: alice.Person.ID, PromptTokens: 20, CompletionTokens: 100})
	done()
	time.Sleep(20 * time.Millisecond) // settle is waiting for the gated flush
	if _, err := svc.Admit(ctx, aliceTwo, nil); err == nil {
		t.Fatal("admitted while the ended request's record waits to be written: its hold went too early")
	}
	release()
	svc.Settled()
	st2, err := svc.StatusOf(ctx, Owner{store.QuotaPerson, "person-a"})
	if err != nil || st2.Daily.Used != 120 {
		t.Fatalf("committed: used %d %v, want 120 (the record, once)", st2.Daily.Used, err)
	}
}
