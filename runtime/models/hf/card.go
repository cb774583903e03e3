package hf

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/superfluid/superfluid/runtime/models/source"
)

// maxCard bounds a model card: real ones are tens of KiB.
const maxCard = 1 << 20

// validRepo checks that repo is OWNER/NAME with names the Hub allows, so that it can go in a
// URL path and a reference.
func validRepo(repo string) error {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || !validName(owner) || !validName(name) {
		return fmt.Errorf("%q is not a Hub repository (OWNER/NAME): %w", repo, ErrBadRef)
	}
	return nil
}

// Card reads repo's README.md from its main revision.
func (s *Source) Card(ctx context.Context, repo string) (string, error) {
	return s.client.Card(ctx, repo)
}

// Card reads repo's README.md (its model card) from the main revision, at most maxCard bytes.
func (c *Client) Card(ctx context.Context, repo string) (string, error) {
	if err := validRepo(repo); err != nil {
		return "", err
	}
	b, err := c.browse(ctx, "read "+repo+"'s model card", c.fileURL(repo, "main", "README.md"), maxCard)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("%s's model card is not text", repo)
	}
	return string(b), nil
}

// Quants lists repo's quantizations.
func (s *Source) Quants(ctx context.Context, repo string) ([]source.Quant, error) {
	return s.client.Quants(ctx, repo)
}

// Quants lists repo's GGUF models from its tree listing (the one Resolve reads), one per quant
// with split parts summed and projectors left out, in the listing's order.
func (c *Client) Quants(ctx context.Context, repo string) ([]source.Quant, error) {
	if err := validRepo(repo); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, browseTimeout)
	defer cancel()
	ref := Ref{Repo: repo}
	entries, err := c.listTree(ctx, ref)
	if err != nil {
		return nil, err
	}
	models, err := groupModels(ref, repoGGUFs(entries))
	if err != nil {
		return nil, err
	}
	var out []source.Quant
	for _, m := range models {
		q := source.Quant{Name: m.quant, Parts: len(m.parts), First: m.parts[0].Path, Ref: refFor(ref, models, m)}
		for _, p := range m.parts {
			q.Size += p.Size
		}
		out = append(out, q)
	}
	return out, nil
}
