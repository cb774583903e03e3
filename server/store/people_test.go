package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// TestPeople: insert, the case-insensitive unique name, lookup by id or name, update, list.
func TestPeople(t *testing.T) {
	s, ctx := openTest(t), context.Background()
	alice := Person{ID: "person-1", Name: "Alice", PasswordHash: "$argon2id$x", Role: "admin", State: "active"}
	if err := s.InsertPerson(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertPerson(ctx, Person{ID: "person-2", Name: "alice", PasswordHash: "h", Role: "member", State: "active"}); !errors.Is(err, ErrPersonNameTaken) {
		t.Fatalf("same name in another case: %v", err)
	}
	if err := s.InsertPerson(ctx, Person{ID: "person-3", Name: "bob", PasswordHash: "h", Role: "owner", State: "active"}); err == nil {
		t.Fatal("unknown role stored")
	}
	for _, q := range []string{"person-1", "ALICE", "alice"} {
		p, err := s.PersonByNameOrID(ctx, q)
		if err != nil || p.ID != "person-1" || p.Name != "Alice" || p.CreatedAt.IsZero() {
			t.Fatalf("lookup %q: %+v %v", q, p, err)
		}
	}
	if _, err := s.PersonByNameOrID(ctx, "carol"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	alice.State, alice.Role, alice.PasswordHash, alice.UpdatedAt = "disabled", "member", "new", time.Now().Add(time.Hour)
	if err := s.UpdatePerson(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdatePerson(ctx, Person{ID: "person-9"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update unknown: %v", err)
	}
	list, err := s.People(ctx)
	if err != nil || len(list) != 1 || list[0].State != "disabled" || list[0].Role != "member" || list[0].PasswordHash != "new" ||
		!list[0].UpdatedAt.After(list[0].CreatedAt) {
		t.Fatalf("list: %+v %v", list, err)
	}
}

// TestKeyPerson: a key keeps its person; a key of nobody reads back with no person (NULL).
func TestKeyPerson(t *testing.T) {
	s, ctx := openTest(t), context.Background()
	if err := s.InsertPerson(ctx, Person{ID: "person-1", Name: "alice", PasswordHash: "h", Role: "member", State: "active"}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertKey(ctx, Key{ID: "key-1", Name: "a", Hash: [32]byte{1}, PersonID: "person-1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertKey(ctx, Key{ID: "key-2", Name: "b", Hash: [32]byte{2}}); err != nil {
		t.Fatal(err)
	}
	keys, err := s.Keys(ctx, false)
	if err != nil || len(keys) != 2 || keys[0].PersonID != "person-1" || keys[1].PersonID != "" {
		t.Fatalf("keys: %+v %v", keys, err)
	}
}

// TestAudit: entries come back newest first, paged by id, filtered by action, with their detail.
func TestAudit(t *testing.T) {
	s, ctx := openTest(t), context.Background()
	if _, err := s.AppendAudit(ctx, AuditEntry{}); err == nil {
		t.Fatal("an entry without an action was kept")
	}
	if _, err := s.AppendAudit(ctx, AuditEntry{Action: "x", Detail: json.RawMessage("{")}); err == nil {
		t.Fatal("a detail that is not JSON was kept")
	}
	for i, a := range []string{"user.create", "user.disable", "user.create"} {
		e, err := s.AppendAudit(ctx, AuditEntry{ActorName: "admin", ActorKey: "k", Action: a, Target: "bob", Detail: json.RawMessage(`{"n":1}`)})
		if err != nil || e.ID != int64(i+1) || e.At.IsZero() {
			t.Fatalf("append %d: %+v %v", i, e, err)
		}
	}
	all, err := s.Audit(ctx, AuditQuery{})
	if err != nil || len(all) != 3 || all[0].ID != 3 || all[0].Action != "user.create" || string(all[0].Detail) != `{"n":1}` ||
		all[0].ActorName != "admin" || all[0].ActorKey != "k" || all[0].Target != "bob" {
		t.Fatalf("all: %+v %v", all, err)
	}
	page, err := s.Audit(ctx, AuditQuery{Limit: 1, Before: 3})
	if err != nil || len(page) != 1 || page[0].ID != 2 {
		t.Fatalf("page: %+v %v", page, err)
	}
	creates, err := s.Audit(ctx, AuditQuery{Action: "user.create"})
	if err != nil || len(creates) != 2 {
		t.Fatalf("creates: %+v %v", creates, err)
	}
}
