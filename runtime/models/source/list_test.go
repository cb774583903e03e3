package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// prefixed is a source whose references start with its name and a colon.
type prefixed struct{ name string }

func (p prefixed) Name() string { return p.name }

func (p prefixed) Parse(s string) (Reference, error) {
	repo, ok := strings.CutPrefix(s, p.name+":")
	switch {
	case !ok:
		return Reference{}, fmt.Errorf("%q is not a %s reference: %w", s, p.name, ErrNotReference)
	case repo == "":
		return Reference{}, errors.New("empty repository")
	}
	return Reference{Source: p.name, Repo: repo}, nil
}

func (p prefixed) Resolve(_ context.Context, ref Reference) (*Resolved, error) {
	return &Resolved{Ref: ref, ID: p.name + "/" + ref.Repo}, nil
}

func (p prefixed) Download(_ context.Context, r *Resolved, dir string, progress func(Progress)) ([]string, error) {
	progress(Progress{File: r.ID, Status: StatusDone})
	return []string{dir + "/" + p.name}, nil
}

func TestListDispatches(t *testing.T) {
	ctx := context.Background()
	l := List{prefixed{"a"}, prefixed{"b"}}
	ref, err := l.Parse("b:x")
	if err != nil || ref.Source != "b" || ref.Repo != "x" {
		t.Fatalf("Parse = %+v, %v", ref, err)
	}
	res, err := l.Resolve(ctx, ref)
	if err != nil || res.ID != "b/x" {
		t.Fatalf("Resolve = %+v, %v", res, err)
	}
	var seen []Progress
	paths, err := l.Download(ctx, res, "/d", func(p Progress) { seen = append(seen, p) })
	if err != nil || len(paths) != 1 || paths[0] != "/d/b" || len(seen) != 1 {
		t.Fatalf("Download = %v, %v, progress %v", paths, err, seen)
	}
	// A name no source reads gets the first source's words; a malformed one its reader's.
	if _, err := l.Parse("c:x"); !errors.Is(err, ErrNotReference) || !strings.Contains(err.Error(), "not a a reference") {
		t.Errorf("Parse of another kind: %v", err)
	}
	if _, err := l.Parse("b:"); err == nil || errors.Is(err, ErrNotReference) || err.Error() != "empty repository" {
		t.Errorf("Parse of a malformed reference: %v", err)
	}
	if _, err := (List{}).Parse("a:x"); !errors.Is(err, ErrNotReference) {
		t.Errorf("Parse with no sources: %v", err)
	}
	if _, err := l.Resolve(ctx, Reference{Source: "z"}); err == nil {
		t.Error("Resolve for an unknown source succeeded")
	}
}

// spelled is a prefixed source whose models clients also name without the prefix.
type spelled struct{ prefixed }

func (s spelled) Spellings(name string) []string { return []string{s.name + "/" + name} }

func (s spelled) Repository(name string) (Reference, bool) {
	return Reference{Source: s.name, Repo: name}, !strings.Contains(name, ":")
}

func TestListNames(t *testing.T) {
	// A source that is no Namer adds nothing; each Namer's spellings come once, in order.
	l := List{prefixed{"plain"}, spelled{prefixed{"a"}}, spelled{prefixed{"b"}}, spelled{prefixed{"a"}}}
	if got := l.Spellings("x"); strings.Join(got, " ") != "a/x b/x" {
		t.Errorf("Spellings = %q, want [a/x b/x]", got)
	}
	if ref, ok := l.Repository("x"); !ok || ref.Source != "a" || ref.Repo != "x" {
		t.Errorf("Repository(x) = %+v, %v; want the first namer's", ref, ok)
	}
	if _, ok := l.Repository("x:q"); ok {
		t.Error("Repository(x:q): no namer reads it as a bare repository")
	}
	if got := (List{prefixed{"plain"}}).Spellings("x"); got != nil {
		t.Errorf("no namers: %q", got)
	}
}
