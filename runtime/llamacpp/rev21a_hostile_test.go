package llamacpp

import (
	"encoding/binary"
	"math/rand"
	"os"
	"testing"
)

// TestRev21aHostilePayload: a saved prefix whose checksum is right but whose llama.cpp state
// is mutated (a hostile file, or one a buggy writer made) goes to llama_state_seq_set_data
// as is; the worker must not crash, and the answer must still be right or a miss.
func TestRev21aHostilePayload(t *testing.T) {
	if os.Getenv("REV21A_HOSTILE") == "" {
		t.Skip("set REV21A_HOSTILE=1")
	}
	dir := t.TempDir()
	probe := loadOwn(t, 1)
	prompt := story(t, probe, "Jim", 200)
	want := mustGenerate(t, probe, greedy(prompt+" more", 8))
	path := savedPrefix(t, dir, prompt)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	bad, restored := 0, 0
	for i := 0; i < 300; i++ {
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		rewrite(t, path, func(e *kvEntry, p []byte) []byte {
			n := 1 + rng.Intn(4)
			for k := 0; k < n; k++ {
				var at int
				if rng.Intn(2) == 0 {
					at = rng.Intn(min(len(p), 2048)) // the meta: cell count, positions, seq ids
				} else {
					at = rng.Intn(len(p))
				}
				if rng.Intn(2) == 0 && at+4 <= len(p) {
					at &^= 3
					v := []uint32{0, 1, 0xffffffff, 0x7fffffff, 0x80000000, uint32(rng.Intn(4096)), rng.Uint32()}[rng.Intn(7)]
					binary.LittleEndian.PutUint32(p[at:], v)
				} else {
					p[at] = byte(rng.Intn(256))
				}
			}
			return p
		})
		e := loadKV(t, dir, 1, 0)
		r := mustGenerate(t, e, greedy(prompt+" more", 8))
		if r.started.RestoredTokens > 0 {
			restored++
		}
		if r.text != want.text {
			bad++
			t.Logf("mutation %d: restored %d, answered %q, want %q", i, r.started.RestoredTokens, r.text, want.text)
		}
		e.Close()
	}
	t.Logf("%d of 300 mutated states restored", restored)
	if bad > 0 {
		t.Errorf("%d of 300 mutated states were restored and changed the answer", bad)
	}
}
