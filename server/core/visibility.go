package core

import (
	"context"

	"github.com/superfluid/superfluid/server/auth"
)

// Owners: when requests carry API keys, the rows a request makes (stored responses here;
// files and batches in server/batches) belong to the key that made them, and another key is
// told they do not exist, with the same 404 as an unknown id. Rows made while no key was
// configured have no owner: admin keys see them. Without keys every request sees every row.

// OwnerOf is the owner a row made by the request ctx belongs to gets: its key's id, "" without
// keys.
func OwnerOf(ctx context.Context) string {
	if id, ok := auth.FromContext(ctx); ok {
		return id.ID
	}
	return ""
}

// Visible reports whether the request ctx belongs to may see a row owned by owner.
func Visible(ctx context.Context, owner string) bool {
	id, ok := auth.FromContext(ctx)
	return !ok || owner == id.ID || (owner == "" && id.Admin)
}

// VisibleOwners are the owners whose rows the request ctx belongs to may list; nil for all.
func VisibleOwners(ctx context.Context) []string {
	id, ok := auth.FromContext(ctx)
	switch {
	case !ok:
		return nil
	case id.Admin:
		return []string{id.ID, ""}
	default:
		return []string{id.ID}
	}
}
