package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/ratelimit"
)

// LimitsConfig configures Limits.
type LimitsConfig struct {
	// PerIP is how many requests a minute one client address may send, a minute's worth at
	// once (--rate-limit-ip); 0 is no limit. The address is the connection's peer, or what a
	// trusted proxy says it is (--trusted-proxies).
	PerIP int
	// Now is the clock; nil is time.Now (tests move it).
	Now func() time.Time
	// Quota, in team mode, refuses a model request of a person or key past its token quotas
	// (429 quota_exceeded, package quota); nil checks none.
	Quota *quota.Service
	// PersonConcurrency is how many model requests one person (team mode) may have in flight
	// at once, over all their keys (--person-concurrency); 0 is no limit.
	PersonConcurrency int
}

// Limits enforces the rate limits: per client address (429 rate_limit_exceeded) and, for a
// request whose API key has limits, the key's requests a minute (rpm) and tokens a minute (tpm,
// 429 rate_limit_exceeded) and requests at once (concurrency, 429 concurrency_limit_exceeded).
// Every refusal carries Retry-After and spends nothing: a request refused by one limit gives
// back what the others took.
//
// Tokens are counted when a request ends (prompt and completion, as the request record has
// them) and taken from the key's tpm allowance then; a request is refused while the allowance
// is spent, until it refills. So the request that crosses the limit completes, and the next
// ones wait for its tokens to be paid back.
//
// In team mode a model request (modelRequest: a generation, an embedding, a forwarded route)
// is also held to its person's concurrency cap (429 concurrency_limit_exceeded) and to its
// person's and key's token quotas (429 quota_exceeded; the rule is package quota's). Other
// routes (listings, usage, the admin API) are not, so a person at a cap can still see why.
//
// Only keys that authenticated get limiters (the guard runs first), so requests with unknown
// keys add nothing here; per-address limiters are bounded (ratelimit.Limiters).
type Limits struct {
	ip  *ratelimit.Limiters
	now func() time.Time

	quota             *quota.Service
	personConcurrency int

	mu      sync.Mutex
	keys    map[string]*keyLimits // by auth.Identity.ID
	persons map[string]int        // model requests in flight by person id (only while > 0)
}

type keyLimits struct {
	limits   auth.Limits
	rpm, tpm *rate.Limiter // nil: no such limit
	running  atomic.Int64
}

// NewLimits returns the limits cfg describes.
func NewLimits(cfg LimitsConfig) *Limits {
	l := &Limits{ip: ratelimit.NewLimiters(cfg.PerIP), now: cfg.Now, keys: map[string]*keyLimits{},
		quota: cfg.Quota, personConcurrency: cfg.PersonConcurrency, persons: map[string]int{}}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

// Keys is how many keys have limiters: at most the keys with limits that made requests.
func (l *Limits) Keys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// Clients is how many client addresses have limiters (bounded by ratelimit.MaxBuckets).
func (l *Limits) Clients() int { return l.ip.Len() }

// key returns the limiters of id, made (again) when its limits are new or changed.
func (l *Limits) key(id *auth.Identity) *keyLimits {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.keys[id.ID]
	if k == nil || k.limits != id.Limits {
		k = &keyLimits{limits: id.Limits}
		if n := id.Limits.RPM; n > 0 {
			k.rpm = rate.NewLimiter(rate.Limit(float64(n)/60), n)
		}
		if n := id.Limits.TPM; n > 0 {
			k.tpm = rate.NewLimiter(rate.Limit(float64(n)/60), n)
		}
		l.keys[id.ID] = k
	}
	return k
}

func (l *Limits) handle(c *gin.Context) {
	r := c.Request
	if r.URL.Path == "/health" || isPreflight(r) {
		c.Next()
		return
	}
	now := l.now()
	var taken [2]*rate.Reservation // given back when a later limit refuses
	giveBack := func() {
		for _, t := range taken {
			if t != nil {
				t.CancelAt(now)
			}
		}
	}
	refuse := func(code, msg string, retry time.Duration) {
		giveBack()
		reject(c, http.StatusTooManyRequests, code, msg, retry)
	}
	var ok bool
	var retry time.Duration
	if l.ip != nil {
		if taken[0], ok, retry = l.ip.Reserve(c.ClientIP(), now); !ok {
			refuse("rate_limit_exceeded", fmt.Sprintf("too many requests from this address (at most %d a minute); retry in %s", l.ip.PerMinute(), seconds(retry)), retry)
			return
		}
	}
	id, ok := auth.FromContext(r.Context())
	if !ok {
		c.Next()
		return
	}
	var meter *core.TokenMeter // counts the request's tokens for the tpm limit and the quotas
	if id.Limits != (auth.Limits{}) {
		k := l.key(id)
		if k.rpm != nil {
			if taken[1], ok, retry = ratelimit.Reserve(k.rpm, now); !ok {
				refuse("rate_limit_exceeded", fmt.Sprintf("the API key %s may send %d requests a minute; retry in %s", quote(id.Name), id.Limits.RPM, seconds(retry)), retry)
				return
			}
		}
		if k.tpm != nil {
			if t := k.tpm.TokensAt(now); t < 1 {
				retry := time.Duration((1 - t) / float64(k.tpm.Limit()) * float64(time.Second))
				refuse("rate_limit_exceeded", fmt.Sprintf("the API key %s may use %d tokens a minute and has used them; retry in %s", quote(id.Name), id.Limits.TPM, seconds(retry)), retry)
				return
			}
		}
		if most := int64(id.Limits.Concurrency); most > 0 {
			if k.running.Add(1) > most {
				k.running.Add(-1)
				refuse("concurrency_limit_exceeded", fmt.Sprintf("the API key %s may run %d requests at once; wait for one to finish", quote(id.Name), most), time.Second)
				return
			}
			defer k.running.Add(-1)
		}
		if k.tpm != nil {
			meter = &core.TokenMeter{}
			defer func() {
				if n := meter.Tokens(); n > 0 {
					k.tpm.ReserveN(l.now(), int(min(n, int64(k.tpm.Burst())))) // into debt: later requests wait
				}
			}()
		}
	}
	if id.Person != nil && modelRequest(c) {
		if !l.enterPerson(id.Person.ID) {
			refuse("concurrency_limit_exceeded", fmt.Sprintf("%s may run %d requests at once over all their keys; wait for one to finish", id.Person.Name, l.personConcurrency), time.Second)
			return
		}
		defer l.leavePerson(id.Person.ID)
	}
	if l.quota != nil && modelRequest(c) {
		if meter == nil {
			meter = &core.TokenMeter{}
		}
		done, err := l.quota.Admit(r.Context(), id, meter)
		var se *llm.StatusError
		switch {
		case errors.As(err, &se):
			refuse(se.Code, se.Message, se.RetryAfter)
			return
		case err != nil:
			giveBack()
			writeError(c, fmt.Errorf("check the token quotas: %w", err))
			c.Abort()
			return
		}
		defer done() // after the request's record is made; its hold goes once it is committed
	}
	if meter != nil {
		c.Request = r.WithContext(core.WithTokenMeter(r.Context(), meter))
	}
	c.Next()
}

// enterPerson counts a model request of the person in, unless it would pass the cap.
func (l *Limits) enterPerson(id string) bool {
	if l.personConcurrency <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.persons[id] >= l.personConcurrency {
		return false
	}
	l.persons[id]++
	return true
}

func (l *Limits) leavePerson(id string) {
	if l.personConcurrency <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.persons[id]--; l.persons[id] <= 0 {
		delete(l.persons, id)
	}
}

// modelPaths are the routes whose requests run on a model (and are recorded with their
// tokens).
var modelPaths = map[string]bool{
	"/v1/chat/completions": true, "/v1/completions": true, "/v1/embeddings": true, "/v1/rerank": true,
	"/v1/responses": true, "/v1/messages": true,
	"/v1/audio/transcriptions": true, "/v1/audio/translations": true, // a generation per 30 s window
	"/api/generate": true, "/api/chat": true, "/api/embed": true, "/api/embeddings": true,
}

// modelRequest reports whether c is a request to a model: a POST to one of modelPaths, or
// to a /v1 route no handler serves (team mode forwards it to the lane's server).
func modelRequest(c *gin.Context) bool {
	r := c.Request
	if r.Method != http.MethodPost {
		return false
	}
	return modelPaths[r.URL.Path] || c.FullPath() == "" && strings.HasPrefix(r.URL.Path, "/v1/")
}

// seconds shows a wait in whole seconds, as Retry-After has it.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%ds", int64((d+time.Second-1)/time.Second))
}
