package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestKeys(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	alice := Key{ID: "key-a1", Name: "alice", Prefix: "sk-sf-a1a1a1", Hash: sha256.Sum256([]byte("a")), Admin: true, CreatedAt: t0}
	ci := Key{ID: "key-c1", Name: "ci", Prefix: "sk-sf-c1c1c1", Hash: sha256.Sum256([]byte("c")), Models: []string{"m1", "m2"},
		Origins: []string{"https://ci.example"}, QoS: "background", RPM: 60, TPM: 1000, Concurrency: 2, CreatedAt: t0.Add(time.Second)}
	for _, k := range []Key{alice, ci} {
		if err := s.InsertKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Keys(ctx, false)
	if err != nil || len(got) != 2 {
		t.Fatalf("keys %+v %v", got, err)
	}
	if g := got[0]; g.ID != "key-a1" || !g.Admin || g.Models != nil || g.Origins != nil || g.Hash != alice.Hash || !g.CreatedAt.Equal(t0) || !g.Active() {
		t.Fatalf("alice %+v", g)
	}
	if g := got[1]; !slices.Equal(g.Models, ci.Models) || !slices.Equal(g.Origins, ci.Origins) || g.QoS != "background" ||
		g.RPM != 60 || g.TPM != 1000 || g.Concurrency != 2 || g.Admin {
		t.Fatalf("ci %+v", g)
	}

	cases := []struct {
		name    string
		key     Key
		wantErr error
	}{
		{"same name as an active key", Key{ID: "key-a2", Name: "alice", Hash: sha256.Sum256([]byte("a2"))}, ErrKeyNameTaken},
		{"same hash", Key{ID: "key-x", Name: "x", Hash: alice.Hash}, nil},
		{"same id", Key{ID: "key-a1", Name: "y", Hash: sha256.Sum256([]byte("y"))}, nil},
	}
	for _, c := range cases {
		err := s.InsertKey(ctx, c.key)
		if err == nil || (c.wantErr != nil && !errors.Is(err, c.wantErr)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}

	// Revoke by name, then by id; a revoked key cannot be revoked again, and its name is free.
	rev, err := s.RevokeKey(ctx, "alice", t0.Add(time.Hour))
	if err != nil || rev.ID != "key-a1" || rev.Active() {
		t.Fatalf("revoke by name: %+v %v", rev, err)
	}
	if _, err := s.RevokeKey(ctx, "alice", time.Time{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke twice: %v", err)
	}
	if _, err := s.RevokeKey(ctx, "key-c1", time.Time{}); err != nil {
		t.Fatalf("revoke by id: %v", err)
	}
	if _, err := s.RevokeKey(ctx, "nobody", time.Time{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
	if err := s.InsertKey(ctx, Key{ID: "key-a3", Name: "alice", Hash: sha256.Sum256([]byte("a3"))}); err != nil {
		t.Fatalf("reuse a revoked key's name: %v", err)
	}
	active, _ := s.Keys(ctx, false)
	all, _ := s.Keys(ctx, true)
	if len(active) != 1 || active[0].ID != "key-a3" || len(all) != 3 || !all[0].RevokedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("active %+v, all %+v", active, all)
	}
}
