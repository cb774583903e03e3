package tray

import (
	"errors"
	"fmt"
)

// The fake's API keys: an in-memory list; keys are "sk-sf-fake-N".

func (f *fakeController) Keys() ([]APIKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]APIKey(nil), f.keys...), nil
}

func (f *fakeController) CreateKey(k NewAPIKey) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.keys {
		if e.Name == k.Name {
			return "", fmt.Errorf("a key with this name exists: %q", k.Name)
		}
	}
	f.keySeq++
	key := fmt.Sprintf("sk-sf-fake-%d", f.keySeq)
	f.keys = append(f.keys, APIKey{ID: fmt.Sprintf("key-%d", f.keySeq), Name: k.Name, Prefix: key[:10], Admin: k.Admin,
		Models: k.Models, Source: "store", Created: "2025-03-01 12:00"})
	return key, nil
}

func (f *fakeController) RevokeKey(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, e := range f.keys {
		if e.ID == id {
			f.keys = append(f.keys[:i], f.keys[i+1:]...)
			return nil
		}
	}
	return errors.New("no such key")
}
