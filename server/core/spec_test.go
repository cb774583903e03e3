package core

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

func TestParseSpeculative(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want *llm.Speculative
		err  string
	}{
		{raw: ``}, {raw: `null`}, {raw: `{}`},
		{raw: `"off"`, want: &llm.Speculative{Mode: llm.SpecOff}},
		{raw: `"ngram"`, want: &llm.Speculative{Mode: llm.SpecNgram}},
		{raw: ` "draft" `, want: &llm.Speculative{Mode: llm.SpecDraft}},
		{raw: `{"mode":"ngram","draft_tokens":8}`, want: &llm.Speculative{Mode: llm.SpecNgram, DraftTokens: 8}},
		{raw: `{"draft_tokens":32}`, want: &llm.Speculative{DraftTokens: 32}},
		{raw: `{"draft_tokens":1}`, want: &llm.Speculative{DraftTokens: 1}},
		{raw: `"medusa"`, err: `"medusa" is unknown; use off, ngram or draft`},
		{raw: `""`, err: `"" is unknown`},
		{raw: `{"mode":""}`, err: `"" is unknown`},
		{raw: `{"mode":"eagle"}`, err: `"eagle" is unknown`},
		{raw: `{"mode":3}`, err: "speculative.mode must be a string"},
		{raw: `{"draft_tokens":0}`, err: "between 1 and 32, got 0"},
		{raw: `{"draft_tokens":33}`, err: "between 1 and 32, got 33"},
		{raw: `{"draft_tokens":-1}`, err: "between 1 and 32, got -1"},
		{raw: `{"draft_tokens":"x"}`, err: "must be an integer between 1 and 32"},
		{raw: `{"draft_tokens":2.5}`, err: "must be an integer between 1 and 32"},
		{raw: `true`, err: "mode string (off, ngram or draft) or an object"},
		{raw: `4`, err: "mode string (off, ngram or draft) or an object"},
		{raw: `["ngram"]`, err: "mode string (off, ngram or draft) or an object"},
	} {
		got, err := ParseSpeculative(json.RawMessage(tc.raw))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one containing %q", tc.raw, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.raw, err)
			continue
		}
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.raw, got, tc.want)
		}
	}
}

func TestSpecReportOf(t *testing.T) {
	if r := SpecReportOf(llm.Done{}, llm.Done{}); r != nil {
		t.Fatalf("no speculation ran, got report %+v", r)
	}
	r := SpecReportOf(llm.Done{Spec: &llm.SpecStats{Mode: llm.SpecNgram, Proposed: 2, Accepted: 1}},
		llm.Done{Spec: &llm.SpecStats{Mode: llm.SpecNgram, Proposed: 1, Accepted: 1, Note: "n-gram instead"}})
	want := SpecReport{Proposed: 3, Accepted: 2, AcceptanceRate: 0.667, Note: "n-gram instead"}
	if r == nil || *r != want {
		t.Fatalf("report %+v, want %+v", r, want)
	}
	if r := SpecReportOf(llm.Done{Spec: &llm.SpecStats{}}); r == nil || r.AcceptanceRate != 0 {
		t.Fatalf("speculation that drafted nothing: report %+v, want a zero one", r)
	}
}

func TestCheckSpeculativeSettings(t *testing.T) {
	for _, ok := range []string{"", "off", "ngram", "draft"} {
		if err := CheckSpeculativeMode(ok); err != nil {
			t.Errorf("mode %q: %v", ok, err)
		}
	}
	if err := CheckSpeculativeMode("fast"); err == nil {
		t.Error("mode fast accepted")
	}
	for n, ok := range map[int]bool{0: true, 1: true, 32: true, 33: false, -1: false} {
		if err := CheckDraftTokens(n); (err == nil) != ok {
			t.Errorf("draft tokens %d: %v", n, err)
		}
	}
}
