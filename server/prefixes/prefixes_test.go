package prefixes

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/store"
)

// audit keeps the entries it is told, as By.Record.
type audit struct{ actions, targets []string }

func (a *audit) by(name string) By {
	return By{Name: name, Record: func(_ context.Context, action, target string, detail map[string]any) error {
		if _, ok := detail["bytes"]; !ok {
			return errors.New("no size in the detail")
		}
		a.actions, a.targets = append(a.actions, action), append(a.targets, target)
		return nil
	}}
}

var cli = By{Name: "cli"}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "superfluid.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestAddListRemove: a prefix is registered, listed, shared with its model only, and removed,
// each write audited; removing an unknown id is ErrNotFound.
func TestAddListRemove(t *testing.T) {
	ctx := context.Background()
	log := &audit{}
	s := New(Config{Store: openStore(t)})
	by := log.by("root")
	all, err := s.Add(ctx, by, NewPrefix{Text: "You are the team's assistant.", Name: "team"})
	if err != nil {
		t.Fatal(err)
	}
	one, err := s.Add(ctx, log.by("cli"), NewPrefix{Text: " Answer in French.", Model: "qwen"})
	if err != nil {
		t.Fatal(err)
	}
	if all.CreatedBy != "root" || one.CreatedBy != "cli" || !strings.HasPrefix(all.ID, "sp-") || one.Text != " Answer in French." {
		t.Fatalf("added %+v and %+v", all, one)
	}
	if got := s.SharedTexts(ctx, "qwen"); !slices.Equal(got, []string{all.Text, one.Text}) {
		t.Errorf("texts for qwen: %q", got)
	}
	if got := s.SharedTexts(ctx, "llama"); !slices.Equal(got, []string{all.Text}) {
		t.Errorf("texts for llama: %q", got)
	}
	if list, err := s.List(ctx); err != nil || len(list) != 2 {
		t.Fatalf("List = %v, %v", list, err)
	}
	if _, err := s.Remove(ctx, by, "sp-nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removing an unknown id: %v", err)
	}
	if _, err := s.Remove(ctx, by, all.ID); err != nil {
		t.Fatal(err)
	}
	if got := s.SharedTexts(ctx, "llama"); len(got) != 0 {
		t.Errorf("after removal, texts for llama: %q", got)
	}
	if want := []string{ActionAdd, ActionAdd, ActionRemove}; !slices.Equal(log.actions, want) || log.targets[2] != all.ID {
		t.Errorf("audited %v on %v, want %v", log.actions, log.targets, want)
	}
}

// TestInvalid: empty, too long and non-UTF-8 texts, bad names and a full table are refused
// with ErrInvalid and store nothing.
func TestInvalid(t *testing.T) {
	ctx := context.Background()
	s := New(Config{Store: openStore(t)})
	for _, np := range []NewPrefix{
		{Text: ""},
		{Text: " \n\t "},
		{Text: strings.Repeat("x", MaxText+1)},
		{Text: "bad \xff byte"},
		{Text: "ok", Name: strings.Repeat("n", MaxName+1)},
		{Text: "ok", Name: "two\nlines"},
		{Text: "ok", Model: "a\nb"},
	} {
		if _, err := s.Add(ctx, cli, np); !errors.Is(err, ErrInvalid) {
			t.Errorf("Add(%.20q, name %.20q): %v, want ErrInvalid", np.Text, np.Name, err)
		}
	}
	if _, err := s.Add(ctx, cli, NewPrefix{Text: strings.Repeat("x", MaxText)}); err != nil {
		t.Errorf("a text of exactly %d bytes: %v", MaxText, err)
	}
	for i := 1; i < MaxCount; i++ {
		if _, err := s.Add(ctx, cli, NewPrefix{Text: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Add(ctx, cli, NewPrefix{Text: "one too many"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("prefix %d: %v, want ErrInvalid", MaxCount+1, err)
	}
}

// TestRefresh: a prefix another process (the CLI) stores reaches SharedTexts once the copy is
// Refresh old.
func TestRefresh(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	server := New(Config{Store: st, Refresh: 50 * time.Millisecond})
	if got := server.SharedTexts(ctx, "m"); len(got) != 0 {
		t.Fatalf("texts before any: %q", got)
	}
	if _, err := New(Config{Store: st}).Add(ctx, cli, NewPrefix{Text: "shared"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if got := server.SharedTexts(ctx, "m"); len(got) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other process's prefix never reached SharedTexts")
		}
	}
}
