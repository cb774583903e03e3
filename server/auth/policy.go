package auth

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/superfluid/superfluid/server/core/qos"
)

// A key policy file (--key-policy FILE) lists several keys, in JSON:
//
//	{
//	  "keys": [
//	    {"name": "alice", "key": "sk-sf-...", "admin": true},
//	    {"name": "ci", "key_sha256": "9f86d081884c7d65...",
//	     "models": ["qwen3-4b"], "qos": "background",
//	     "rpm": 60, "tpm": 100000, "concurrency": 2,
//	     "origins": ["https://ci.example.com"]}
//	  ]
//	}
//
// Fields of a key:
//   - name (required): unique in the file; the key's id is "policy:" + name.
//   - key or key_sha256 (one of them): the key itself (any printable ASCII without spaces;
//     `superfluid keys create` prints a good one) or the hex SHA-256 of it, so that the file
//     holds no secret (`printf %s "$KEY" | sha256sum`).
//   - admin: whether the key may use the admin routes (model load, unload, delete, pull,
//     copy and the keys routes). Default false.
//   - models: the model ids the key may use; absent or empty for every model. Other models are
//     answered 404 model_not_found, as if they did not exist.
//   - qos: the highest scheduling class the key may ask for (interactive, completion, agent or
//     background); absent for any.
//   - rpm, tpm, concurrency: requests per minute, tokens per minute and requests at once; 0 or
//     absent for no limit.
//   - origins: the browser origins the key may be used from (patterns as in --cors-origins);
//     absent for any the server allows. They are added to the origins CORS answers.
//
// Unknown fields are errors, so that a misspelt limit is not silently ignored.
type policyFile struct {
	Keys []policyKey `json:"keys"`
}

type policyKey struct {
	Name        string   `json:"name"`
	Key         string   `json:"key"`
	KeySHA256   string   `json:"key_sha256"`
	Admin       bool     `json:"admin"`
	Models      []string `json:"models"`
	QoS         string   `json:"qos"`
	RPM         int      `json:"rpm"`
	TPM         int      `json:"tpm"`
	Concurrency int      `json:"concurrency"`
	Origins     []string `json:"origins"`
}

// LoadPolicy reads a key policy file (see policyFile for the format).
func LoadPolicy(path string) ([]Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--key-policy: %w", err)
	}
	keys, err := ParsePolicy(b)
	if err != nil {
		return nil, fmt.Errorf("--key-policy %s: %w", path, err)
	}
	return keys, nil
}

// ParsePolicy reads the JSON of a key policy file.
func ParsePolicy(b []byte) ([]Key, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f policyFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a key policy (JSON {\"keys\": [{\"name\": ..., \"key\": ...}]}): %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("not a key policy: text after the JSON object")
	}
	if len(f.Keys) == 0 {
		return nil, errors.New(`the policy lists no keys: {"keys": [{"name": "alice", "key": "sk-sf-...", "admin": true}]}`)
	}
	var out []Key
	names, hashes := map[string]bool{}, map[[32]byte]string{}
	for i, p := range f.Keys {
		k, err := p.key()
		if err != nil {
			return nil, fmt.Errorf("key %d (%q): %w", i+1, p.Name, err)
		}
		if names[p.Name] {
			return nil, fmt.Errorf("key %d: two keys are named %q", i+1, p.Name)
		}
		if other, dup := hashes[k.Hash]; dup {
			return nil, fmt.Errorf("key %d (%q): the same key as %q", i+1, p.Name, other)
		}
		names[p.Name], hashes[k.Hash] = true, p.Name
		out = append(out, k)
	}
	return out, nil
}

func (p policyKey) key() (Key, error) {
	if err := CheckName(p.Name); err != nil {
		return Key{}, err
	}
	var k Key
	switch {
	case (p.Key == "") == (p.KeySHA256 == ""):
		return Key{}, errors.New(`give either "key" (the key) or "key_sha256" (its hex SHA-256)`)
	case p.Key != "":
		if err := checkSecret(p.Key); err != nil {
			return Key{}, err
		}
		k.Hash = Hash(p.Key)
	default:
		h, err := hex.DecodeString(p.KeySHA256)
		if err != nil || len(h) != len(k.Hash) {
			return Key{}, fmt.Errorf("key_sha256 is 64 hex digits (printf %%s \"$KEY\" | sha256sum), got %q", p.KeySHA256)
		}
		copy(k.Hash[:], h)
	}
	q, err := qos.Parse(p.QoS)
	if err != nil {
		return Key{}, err
	}
	nk := NewKey{Name: p.Name, Admin: p.Admin, Models: p.Models, QoS: q, Origins: p.Origins,
		Limits: Limits{RPM: p.RPM, TPM: p.TPM, Concurrency: p.Concurrency}}
	if err := (&Keyring{}).check(&nk); err != nil {
		return Key{}, err
	}
	k.Identity = Identity{ID: "policy:" + nk.Name, Name: nk.Name, Admin: nk.Admin, Models: nk.Models, QoS: nk.QoS,
		Limits: nk.Limits, Origins: nk.Origins, Source: SourcePolicy}
	return k, nil
}
