package tray

import (
	"context"
	"errors"
	"strings"
)

// fakeDiscover is the fake Hub the Discover tab's tests search.
type fakeDiscover struct {
	models []HubModel
	quants map[string][]HubQuant
	cards  map[string]string
	err    error // every call fails with it (offline)
	asked  []DiscoverQuery
}

func (f *fakeController) disc() *fakeDiscover {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.discover == nil {
		f.discover = &fakeDiscover{}
	}
	return f.discover
}

func (f *fakeController) Discover(ctx context.Context, q DiscoverQuery) ([]HubModel, error) {
	d := f.disc()
	f.mu.Lock()
	defer f.mu.Unlock()
	d.asked = append(d.asked, q)
	if d.err != nil {
		return nil, d.err
	}
	var out []HubModel
	for _, m := range d.models {
		if strings.Contains(strings.ToLower(m.Repo), strings.ToLower(q.Text)) {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeController) HubQuants(ctx context.Context, repo string, contextLen, lanes int) ([]HubQuant, error) {
	d := f.disc()
	f.mu.Lock()
	defer f.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	qs := append([]HubQuant(nil), d.quants[repo]...)
	for i := range qs { // a longer context needs more: the choice must reach the estimate
		qs[i].Need += int64(contextLen) * int64(max(1, lanes)) << 15
	}
	return qs, nil
}

func (f *fakeController) ModelCard(ctx context.Context, repo string) (string, error) {
	d := f.disc()
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := d.cards[repo]; ok {
		return c, nil
	}
	return "", errors.New("no card")
}
