// Package auth holds the API keys and who a request is: the Identity an authenticated request
// carries in its context, the Keyring that turns a presented key into one (keys from --api-key,
// from a --key-policy file and those stored in SQLite), and the policy file's format.
//
// The core reads the identity with FromContext to scope models (and later files, batches,
// usage and limits) by key; it knows nothing of HTTP. The HTTP middleware (package server)
// authenticates and puts the identity in the context with NewContext.
//
// It also tells who sent a request (peer.go, browser.go): this machine or another, a program or
// a web page, and whether the request may use the admin routes (Admin).
//
// Keys are kept and compared as SHA-256 hashes: a presented key is hashed once and the hash is
// compared with crypto/subtle. Keys are random (sk-sf- and 48 hex digits; sk-ss- for the
// keys of a person in team mode), so a fast hash is
// the right one; a key chosen by hand (--api-key, a policy's "key") is only ever in memory.
package auth

import (
	"context"
	"slices"

	"github.com/superfluid/superfluid/server/core/qos"
)

// Identity is who an authenticated request is: one API key and what it may do. A nil
// *Identity (no keys configured) may do everything; its methods accept a nil receiver.
type Identity struct {
	// ID is stable across restarts: "key-<hex>" for a stored key, "policy:<name>" for a
	// --key-policy key and "api-key" for --api-key. Usage, files and batches are attributed
	// to it.
	ID string
	// Name is what people call the key (unique among active keys).
	Name string
	// Admin reports whether the key may use the admin routes: model load, unload, delete,
	// pull and copy, and the keys routes.
	Admin bool
	// Models are the model ids the key may use; empty for every model.
	Models []string
	// QoS is the highest scheduling class the key may ask for; qos.Unset for any.
	QoS qos.Class
	// Limits are the key's rate limits; zero fields are no limit.
	Limits Limits
	// Origins are the browser origins (patterns, see MatchOrigin) the key may be used from;
	// empty for any origin the server allows.
	Origins []string
	// Source is where the key comes from: SourceFlag, SourcePolicy or SourceStore.
	Source string
	// Person is who the key belongs to in team mode (an sk-ss- key made for a person); nil
	// for a key of nobody. A person's keys are admin keys exactly when the person is an admin.
	Person *Person
}

// Person is the person a key belongs to, as the keyring last read them: routing, bookings and
// usage know who sent a request from it.
type Person struct {
	ID, Name string
	// Role is "admin" or "member".
	Role string
}

// RoleAdmin is the role whose keys are admin keys.
const RoleAdmin = "admin"

// Where keys come from.
const (
	SourceFlag   = "flag"   // --api-key
	SourcePolicy = "policy" // --key-policy
	SourceStore  = "store"  // created with superfluid keys create, POST /v1/keys or the app
)

// Limits are a key's rate limits; 0 is no limit. They are stored and carried on the identity;
// the limiter enforces them per Identity.ID, after authentication (so a request with an
// unknown key never creates a limiter).
type Limits struct {
	// RPM is requests per minute; TPM tokens (prompt + completion) per minute; Concurrency
	// the requests running at once.
	RPM, TPM, Concurrency int
}

// AllowsModel reports whether the identity may use the model with this id. A key refused a
// model is answered as if the model did not exist (404 model_not_found), as OpenAI answers
// a project key without access to a model.
func (id *Identity) AllowsModel(model string) bool {
	return id == nil || len(id.Models) == 0 || slices.Contains(id.Models, model)
}

// AllowsQoS reports whether the identity may ask for scheduling class q.
func (id *Identity) AllowsQoS(q qos.Class) bool {
	return id == nil || id.QoS == qos.Unset || q <= id.QoS
}

// AllowsOrigin reports whether the identity may be used from a browser page of origin (""
// for a request that is not from a browser).
func (id *Identity) AllowsOrigin(origin string) bool {
	if id == nil || origin == "" || len(id.Origins) == 0 {
		return true
	}
	return slices.ContainsFunc(id.Origins, func(p string) bool { return MatchOrigin(p, origin) })
}

type contextKey struct{}

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, contextKey{}, id)
}

// FromContext returns the identity of the request ctx belongs to. ok is false when the server
// has no keys (then every request may do everything, and id is nil, which every method of
// Identity accepts).
func FromContext(ctx context.Context) (id *Identity, ok bool) {
	id, ok = ctx.Value(contextKey{}).(*Identity)
	return id, ok && id != nil
}
