package openai_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// slotsEngine is the fake with a fixed lane snapshot, as the real engine reports one.
type slotsEngine struct {
	*enginetest.Engine
	slots llm.Slots
}

func (e *slotsEngine) Slots(context.Context) (llm.Slots, error) { return e.slots, nil }

// TestSlotsAndPropsSpeed: /slots carries the speculation and disk-cache totals and each lane's
// last cache miss, and says whether the model speculates; /props reports the speculation a
// request naming none runs with (the server's --speculative here: no model settings).
func TestSlotsAndPropsSpeed(t *testing.T) {
	tmpl, _ := chat.Parse(chatML)
	for _, tc := range []struct {
		flag, mode  string
		speculative bool
	}{{"", llm.SpecOff, false}, {llm.SpecNgram, llm.SpecNgram, true}, {llm.SpecDraft, llm.SpecNgram, true}} {
		eng := &slotsEngine{Engine: enginetest.New(4096, defaultReply), slots: llm.Slots{
			Lanes:  []llm.LaneState{{ID: 0, State: "idle", LastMiss: llm.CacheMissDiverged(40)}, {ID: 1, State: "idle"}},
			Totals: llm.Totals{SpecProposed: 60, SpecAccepted: 38, KVSaved: 3, KVRestored: 2, KVRestoredTokens: 900, KVDiskBytes: 1 << 20},
		}}
		svc := core.New(core.Config{Speculative: tc.flag}, nil, &core.Model{ID: "fake", Path: "/models/fake.gguf", Engine: eng, Template: tmpl, ContextLength: 4096})
		srv := httptest.NewServer(server.New(server.Config{}, svc))
		var slots []struct {
			Speculative bool `json:"speculative"`
			Lanes       []struct {
				LastMiss string `json:"last_miss"`
			} `json:"lanes"`
			Totals map[string]float64 `json:"totals"`
		}
		res, b := doGet(t, srv.URL+"/slots")
		if err := json.Unmarshal(b, &slots); err != nil || res != 200 || len(slots) != 1 {
			t.Fatalf("/slots: %d %s (%v)", res, b, err)
		}
		s := slots[0]
		if s.Speculative != tc.speculative || len(s.Lanes) != 2 || s.Lanes[0].LastMiss != "diverged at token 40" || s.Lanes[1].LastMiss != "" {
			t.Errorf("--speculative %q: /slots %s", tc.flag, b)
		}
		for k, v := range map[string]float64{"spec_proposed": 60, "spec_accepted": 38, "kv_saved": 3, "kv_restored": 2, "kv_restored_tokens": 900, "kv_disk_bytes": 1 << 20} {
			if s.Totals[k] != v {
				t.Errorf("/slots totals.%s = %v, want %v (%s)", k, s.Totals[k], v, b)
			}
		}
		var props struct {
			Settings struct {
				Speculative map[string]any `json:"speculative"`
			} `json:"default_generation_settings"`
		}
		res, b = doGet(t, srv.URL+"/props")
		if err := json.Unmarshal(b, &props); err != nil || res != 200 {
			t.Fatalf("/props: %d %s (%v)", res, b, err)
		}
		if sp := props.Settings.Speculative; sp["mode"] != tc.mode || len(sp) != 1 {
			t.Errorf("--speculative %q: /props default_generation_settings.speculative %v, want mode %s alone (the engine's draft length is not guessed)", tc.flag, sp, tc.mode)
		}
		srv.Close()
	}
}

func doGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	res, b := servertest.Do(t, "GET", url, "")
	return res.StatusCode, b
}
