package people

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/store"
)

// Actor is who makes a change, for the audit log.
type Actor struct {
	// PersonID and PersonName are the person ("" for none).
	PersonID, PersonName string
	// Key is the name of the key the request carried ("" for none).
	Key string
	// Via is where the change came from: "api", "cli" or "serve" (the first admin).
	Via string
}

// ActorOf is the actor of a request with identity id (nil: no keys, a loopback admin).
func ActorOf(id *auth.Identity) Actor {
	a := Actor{Via: "api"}
	if id == nil {
		return a
	}
	a.Key = id.Name
	if id.Person != nil {
		a.PersonID, a.PersonName = id.Person.ID, id.Person.Name
	}
	return a
}

// CLI is the actor of the superfluid users and keys commands.
var CLI = Actor{Via: "cli"}

// Record appends an entry to the audit log: by did action to target; detail is marshalled to
// a JSON object (with by.Via added) and must hold no secret.
func (s *Service) Record(ctx context.Context, by Actor, action, target string, detail map[string]any) error {
	if detail == nil {
		detail = map[string]any{}
	}
	if by.Via != "" {
		detail["via"] = by.Via
	}
	raw, err := json.Marshal(detail)
	if err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	_, err = s.st.AppendAudit(ctx, store.AuditEntry{ActorPerson: by.PersonID, ActorName: by.PersonName, ActorKey: by.Key,
		Action: action, Target: target, Detail: raw})
	return err
}

// Audit lists the audit log, newest first.
func (s *Service) Audit(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, error) {
	return s.st.Audit(ctx, q)
}
