package web

import (
	"context"
	"net/http"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/people"
)

// List is the shape of every list: {"object": "list", "data": [...]}.
type List[T any] struct {
	Object string `json:"object" enum:"list"`
	Data   []T    `json:"data"`
}

// ListOf is items as a List (an empty one, never null).
func ListOf[T any](items []T) List[T] {
	if items == nil {
		items = []T{}
	}
	return List[T]{Object: "list", Data: items}
}

// Deleted is the answer to a deletion.
type Deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

var noPerson = Errorf(http.StatusForbidden, "person_required", "",
	"this key belongs to no person; sign in, or use one of your own keys, to see your own things")

// person is the caller's person, for the routes about one's own things.
func (c Caller) person() (people.Person, error) {
	if c.Person.ID == "" {
		return people.Person{}, noPerson
	}
	return c.Person, nil
}

// callerIdentity is the request's identity (a key's, or the one a session was given).
func callerIdentity(ctx context.Context) *auth.Identity {
	id, _ := auth.FromContext(ctx)
	return id
}

// ownOnly is ctx with the caller's identity stripped of admin rights, so the services answer
// with the caller's own things only (an admin's own bookings, own usage) through the same code
// that scopes a member's.
func ownOnly(ctx context.Context) context.Context {
	id, ok := auth.FromContext(ctx)
	if !ok || id == nil {
		return ctx
	}
	own := *id
	own.Admin = false
	return auth.NewContext(ctx, &own)
}
