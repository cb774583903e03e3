package web

import (
	"net/http"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core/qos"
	"github.com/superfluid/superfluid/server/people"
)

// Key is an API key on the wire, as /v1/keys shows one (times in Unix seconds, null when not
// set); Key itself only in the answer to its creation.
type Key struct {
	Object      string   `json:"object" enum:"api_key"`
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Prefix      string   `json:"prefix"`
	Admin       bool     `json:"admin"`
	Models      []string `json:"models"`
	QoS         *string  `json:"qos"`
	RPM         int      `json:"rpm"`
	TPM         int      `json:"tpm"`
	Concurrency int      `json:"concurrency"`
	Origins     []string `json:"origins"`
	Source      string   `json:"source"`
	CreatedAt   *int64   `json:"created_at"`
	RevokedAt   *int64   `json:"revoked_at"`
	Key         string   `json:"key,omitempty" doc:"the key itself: shown once, in the answer to its creation"`
	User        *KeyUser `json:"user,omitempty"`
}

// KeyUser names a key's person.
type KeyUser struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"`
}

// KeyOf is k on the wire.
func KeyOf(k auth.Info) Key {
	o := Key{Object: "api_key", ID: k.ID, Name: k.Name, Prefix: k.Prefix, Admin: k.Admin, Models: nonNil(k.Models),
		RPM: k.Limits.RPM, TPM: k.Limits.TPM, Concurrency: k.Limits.Concurrency, Origins: nonNil(k.Origins), Source: k.Source}
	if k.Person != nil {
		o.User = &KeyUser{ID: k.Person.ID, Name: k.Person.Name, Role: k.Person.Role}
	}
	if k.QoS != qos.Unset {
		q := k.QoS.String()
		o.QoS = &q
	}
	if !k.CreatedAt.IsZero() {
		t := k.CreatedAt.Unix()
		o.CreatedAt = &t
	}
	if !k.RevokedAt.IsZero() {
		t := k.RevokedAt.Unix()
		o.RevokedAt = &t
	}
	return o
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// NewOwnKey is the body of POST /api/keys: a key for the signed-in person (as POST /v1/keys,
// without admin or user: a person's key can do what the person can).
type NewOwnKey struct {
	Name        string   `json:"name" required:"true" minLength:"1" maxLength:"64"`
	Models      []string `json:"models" maxItems:"1000" doc:"the models the key may use; empty for every model"`
	QoS         string   `json:"qos" enum:",interactive,completion,agent,background" doc:"the highest scheduling class the key may ask for"`
	RPM         int      `json:"rpm" minimum:"0"`
	TPM         int      `json:"tpm" minimum:"0"`
	Concurrency int      `json:"concurrency" minimum:"0"`
	Origins     []string `json:"origins" maxItems:"100" doc:"browser origins the key may be used from"`
}

func (a *API) ownKeyRoutes() {
	Handle(a, http.MethodGet, "/api/keys", Meta{Summary: "Your API keys", Tag: "keys", Access: SignedIn}, a.ownKeys)
	Handle(a, http.MethodPost, "/api/keys", Meta{Summary: "Create an API key for yourself (shown once)", Tag: "keys", Access: SignedIn, Status: http.StatusCreated},
		a.createOwnKey)
	Handle(a, http.MethodDelete, "/api/keys/:id", Meta{Summary: "Revoke one of your API keys", Tag: "keys", Access: SignedIn}, a.revokeOwnKey)
}

func (a *API) ownKeys(r *Request[NoBody]) (List[Key], error) {
	p, err := r.Caller.person()
	if err != nil {
		return List[Key]{}, err
	}
	mine, err := a.keysOf(r, p)
	if err != nil {
		return List[Key]{}, err
	}
	out := make([]Key, 0, len(mine))
	for _, k := range mine {
		out = append(out, KeyOf(k))
	}
	return ListOf(out), nil
}

// keysOf is p's active keys.
func (a *API) keysOf(r *Request[NoBody], p people.Person) ([]auth.Info, error) {
	all, err := a.cfg.Keys.List(r.Ctx, false)
	if err != nil {
		return nil, err
	}
	var mine []auth.Info
	for _, k := range all {
		if k.Person != nil && k.Person.ID == p.ID {
			mine = append(mine, k)
		}
	}
	return mine, nil
}

func (a *API) createOwnKey(r *Request[NewOwnKey]) (Key, error) {
	if err := r.Caller.mayManageKeys(); err != nil {
		return Key{}, err
	}
	p, err := r.Caller.person()
	if err != nil {
		return Key{}, err
	}
	q, err := qos.Parse(r.Body.QoS)
	if err != nil {
		return Key{}, &Error{Status: http.StatusBadRequest, Code: "invalid_body", Param: "qos", Message: "qos: " + err.Error()}
	}
	b := r.Body
	key, info, err := a.cfg.Keys.Create(r.Ctx, auth.NewKey{Name: b.Name, Models: b.Models, QoS: q, Origins: b.Origins, Person: p.ID,
		Limits: auth.Limits{RPM: b.RPM, TPM: b.TPM, Concurrency: b.Concurrency}})
	if err != nil {
		return Key{}, err
	}
	// Audited as the /v1 keys routes audit a creation.
	if err := a.cfg.People.Record(r.Ctx, people.ActorOf(callerIdentity(r.Ctx)), "key.create", info.Name,
		map[string]any{"id": info.ID, "admin": info.Admin, "user": p.Name}); err != nil {
		return Key{}, err
	}
	o := KeyOf(info)
	o.Key = key
	return o, nil
}

func (a *API) revokeOwnKey(r *Request[NoBody]) (Deleted, error) {
	if err := r.Caller.mayManageKeys(); err != nil {
		return Deleted{}, err
	}
	p, err := r.Caller.person()
	if err != nil {
		return Deleted{}, err
	}
	mine, err := a.keysOf(r, p)
	if err != nil {
		return Deleted{}, err
	}
	want := r.Param("id")
	for _, k := range mine {
		if k.ID != want && k.Name != want {
			continue
		}
		info, err := a.cfg.Keys.Revoke(r.Ctx, k.ID)
		if err != nil {
			return Deleted{}, err
		}
		if err := a.cfg.People.Record(r.Ctx, people.ActorOf(callerIdentity(r.Ctx)), "key.revoke", info.Name, map[string]any{"id": info.ID}); err != nil {
			return Deleted{}, err
		}
		return Deleted{ID: info.ID, Object: "api_key.deleted", Deleted: true}, nil
	}
	// Another person's key is answered as if it did not exist.
	return Deleted{}, Errorf(http.StatusNotFound, "key_not_found", "", "you have no key %q", want)
}

// mayManageKeys refuses a key that is not an admin's: a member's key is what an admin limited
// (models, rates, origins), so it must not mint one without those limits or revoke its
// siblings (rev20a). A cookie session, or an admin key, manages the person's keys.
func (c Caller) mayManageKeys() error {
	if c.Key != nil && !c.Key.Admin {
		return Errorf(http.StatusForbidden, "session_required", "", "creating or revoking keys needs a signed-in session (the web pages, POST /api/auth/login) or an admin key")
	}
	return nil
}
