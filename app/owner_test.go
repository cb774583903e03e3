package app

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/batches"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/store"
)

// TestOwnerLookupDisabledPerson: a batch runs as the key that made it, and a disabled person's
// key is no owner to run as (as a revoked key is not): their queued batches fail rather than
// run in their name after their keys stopped working.
func TestOwnerLookupDisabledPerson(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "superfluid.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keys, err := auth.New(ctx, auth.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ppl := people.New(people.Config{Store: st, Keys: keys, Hash: people.HashParams{Memory: 64, Time: 1, Threads: 1}})
	for _, np := range []people.NewPerson{{Name: "root", Password: "password0", Role: people.RoleAdmin}, {Name: "bob", Password: "password1"}} {
		if _, err := ppl.Create(ctx, people.CLI, np); err != nil {
			t.Fatal(err)
		}
	}
	_, info, err := keys.Create(ctx, auth.NewKey{Name: "bobs", Person: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	owner := ownerLookup(keys)
	if id, err := owner(ctx, info.ID); err != nil || id.Person == nil || id.Person.Name != "bob" {
		t.Fatalf("bob's key: %+v %v", id, err)
	}
	if _, err := ppl.Disable(ctx, people.CLI, "bob"); err != nil {
		t.Fatal(err)
	}
	if id, err := owner(ctx, info.ID); !errors.Is(err, batches.ErrOwnerNotFound) {
		t.Fatalf("a disabled person's key as a batch's owner: %+v %v, want ErrOwnerNotFound", id, err)
	}
}
