package app

import (
	"context"
	"fmt"
	"io"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/store"
)

// openPeople is team mode's people over st, reloading keys on a change of state or role; nil
// without --team (single-user mode has no people).
func openPeople(cfg Config, st *store.Store, keys *auth.Keyring) (*people.Service, error) {
	if err := checkBookingPolicy(cfg); err != nil {
		return nil, err
	}
	if !cfg.Team {
		if cfg.AdminPasswordFile != "" {
			return nil, &UsageError{"--admin-password-file is the first admin's password in team mode: add --team"}
		}
		return nil, nil
	}
	return people.New(people.Config{Store: st, Keys: keys}), nil
}

// startTeam prepares team mode at start: every request needs a key from now on, and the
// first start creates the first admin (a one-time password is kept for teamNote to print).
func (a *App) startTeam() error {
	if a.people == nil {
		return nil
	}
	a.keys.SetRequired(true)
	p, password, created, err := a.people.EnsureFirstAdmin(context.Background(), a.cfg.AdminPasswordFile)
	if err != nil {
		return &UsageError{"team mode's first admin: " + err.Error()}
	}
	if created {
		a.firstAdmin = fmt.Sprintf("superfluid: team mode: created the first admin %q", p.Name)
		if password != "" {
			a.firstAdmin += fmt.Sprintf(" with the one-time password %s (shown only now; change it with superfluid users passwd %s)", password, p.Name)
		} else {
			a.firstAdmin += " with the password of --admin-password-file"
		}
	}
	return nil
}

// teamNote prints what team mode's start did: the first admin (once) and how to get a key.
func (a *App) teamNote(w io.Writer) {
	if a.people == nil {
		return
	}
	if a.firstAdmin != "" {
		fmt.Fprintln(w, a.firstAdmin)
		a.firstAdmin = "" // the password is shown once
		fmt.Fprintf(w, "superfluid: team mode: make the admin a key with superfluid keys create NAME --user %s\n", people.FirstAdminName)
	}
}

// People is team mode's people; nil without --team.
func (a *App) People() *people.Service { return a.people }
