package desktop

import (
	"context"
	"time"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/tray"
)

// Keys lists the active API keys for the Keys tab.
func (c *Controller) Keys() ([]tray.APIKey, error) {
	infos, err := c.d.Keys.List(context.Background(), false)
	if err != nil {
		return nil, err
	}
	out := make([]tray.APIKey, 0, len(infos))
	for _, k := range infos {
		created := ""
		if !k.CreatedAt.IsZero() {
			created = k.CreatedAt.Local().Format(time.DateTime)
		}
		out = append(out, tray.APIKey{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Admin: k.Admin, Models: k.Models,
			Source: k.Source, Created: created})
	}
	return out, nil
}

// CreateKey stores a new key; it works at once in the running server.
func (c *Controller) CreateKey(k tray.NewAPIKey) (string, error) {
	key, _, err := c.d.Keys.Create(context.Background(), auth.NewKey{Name: k.Name, Admin: k.Admin, Models: k.Models})
	return key, err
}

// RevokeKey revokes a stored key; it stops working at once in the running server.
func (c *Controller) RevokeKey(id string) error {
	_, err := c.d.Keys.Revoke(context.Background(), id)
	return err
}
