package bookings

import (
	"context"

	"github.com/superfluid/superfluid/server/auth"
)

// Person is who books: the person a request comes from.
type Person struct {
	ID, Name string
	Admin    bool
}

// Local is the person of a request made while the server has no keys (the machine's own user,
// and the command line on the data directory): the only user there is, hence an admin.
var Local = Person{ID: "local", Name: "local", Admin: true}

// PersonFrom is the person ctx's request comes from. Until identities carry a person it is the
// request's API key (its id and name); this is the one place that changes when they do.
func PersonFrom(ctx context.Context) Person {
	id, keyed := auth.FromContext(ctx)
	if !keyed {
		return Local
	}
	return Person{ID: id.ID, Name: id.Name, Admin: id.Admin}
}
