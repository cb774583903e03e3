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

// PersonFrom is the person ctx's request comes from: the key's person in team mode, else the
// key itself (its id and name) for a key of nobody. A person's keys are admin keys exactly
// when the person is an admin.
func PersonFrom(ctx context.Context) Person {
	id, keyed := auth.FromContext(ctx)
	switch {
	case !keyed:
		return Local
	case id.Person != nil:
		return Person{ID: id.Person.ID, Name: id.Person.Name, Admin: id.Admin}
	}
	return Person{ID: id.ID, Name: id.Name, Admin: id.Admin}
}
