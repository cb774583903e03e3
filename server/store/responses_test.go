package store

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func sampleResponse(id, prev string) Response {
	instr := "Be brief."
	return Response{
		ID: id, Model: "fake", PreviousResponseID: prev, Instructions: &instr, Status: "completed",
		Input:       json.RawMessage(`[{"id":"msg_in_` + id + `","type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]`),
		Output:      json.RawMessage(`[{"id":"msg_out_` + id + `","type":"message","role":"assistant","content":[{"type":"output_text","text":"yo","annotations":[]}]}]`),
		Body:        json.RawMessage(`{"id":"` + id + `","object":"response"}`),
		InputTokens: 12, OutputTokens: 3, CachedTokens: 7,
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC),
	}
}

func TestResponseRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	tests := []struct {
		name string
		in   Response
		want func(Response) Response
	}{
		{"full", sampleResponse("resp_a", ""), func(r Response) Response { return r }},
		{"continues another", sampleResponse("resp_b", "resp_a"), func(r Response) Response { return r }},
		{"no instructions, empty JSON", Response{ID: "resp_c", Model: "m", Status: "incomplete", CreatedAt: time.Unix(5, 0).UTC()},
			func(r Response) Response {
				r.Input, r.Output, r.Body = json.RawMessage("[]"), json.RawMessage("[]"), json.RawMessage("{}")
				return r
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.SaveResponse(ctx, tt.in); err != nil {
				t.Fatalf("SaveResponse: %v", err)
			}
			got, err := s.Response(ctx, tt.in.ID)
			if err != nil {
				t.Fatalf("Response: %v", err)
			}
			if want := tt.want(tt.in); !reflect.DeepEqual(got, want) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestSaveResponseRejects(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	if err := s.SaveResponse(ctx, sampleResponse("resp_dup", "")); err != nil {
		t.Fatal(err)
	}
	bad := sampleResponse("resp_badjson", "")
	bad.Output = json.RawMessage(`[{"unterminated"`)
	for name, r := range map[string]Response{
		"duplicate id": sampleResponse("resp_dup", ""),
		"empty id":     sampleResponse("", ""),
		"invalid JSON": bad,
	} {
		if err := s.SaveResponse(ctx, r); err == nil {
			t.Errorf("%s: SaveResponse succeeded, want an error", name)
		}
	}
	if _, err := s.Response(ctx, "resp_badjson"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a rejected response was stored: %v", err)
	}
}

func TestResponseChain(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chain.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// Two conversations share resp_1: 1 → 2 → 3 and 1 → 4.
	for _, r := range []Response{sampleResponse("resp_1", ""), sampleResponse("resp_2", "resp_1"),
		sampleResponse("resp_3", "resp_2"), sampleResponse("resp_4", "resp_1")} {
		if err := s.SaveResponse(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path) // the chain survives a restart
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	ids := func(rs []Response) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	for _, tt := range []struct {
		id   string
		want []string
	}{
		{"resp_1", []string{"resp_1"}},
		{"resp_3", []string{"resp_1", "resp_2", "resp_3"}},
		{"resp_4", []string{"resp_1", "resp_4"}},
	} {
		chain, err := s.ResponseChain(ctx, tt.id)
		if err != nil {
			t.Fatalf("ResponseChain(%s): %v", tt.id, err)
		}
		if got := ids(chain); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ResponseChain(%s) = %v, want %v (oldest first)", tt.id, got, tt.want)
		}
		if last := chain[len(chain)-1]; string(last.Input) != string(sampleResponse(tt.id, "").Input) {
			t.Errorf("ResponseChain(%s): input %s", tt.id, last.Input)
		}
	}

	// Deleting the middle leaves resp_3 readable but its conversation broken at resp_2.
	if err := s.DeleteResponse(ctx, "resp_2"); err != nil {
		t.Fatalf("DeleteResponse: %v", err)
	}
	for _, tt := range []struct{ id, missing string }{
		{"resp_3", "resp_2"}, {"resp_2", "resp_2"}, {"resp_nope", "resp_nope"},
	} {
		_, err := s.ResponseChain(ctx, tt.id)
		var missing *MissingResponseError
		if !errors.As(err, &missing) || missing.ID != tt.missing || !errors.Is(err, ErrNotFound) {
			t.Errorf("ResponseChain(%s) error = %v, want missing %s", tt.id, err, tt.missing)
		}
	}
	if _, err := s.Response(ctx, "resp_3"); err != nil {
		t.Errorf("resp_3 after deleting resp_2: %v", err)
	}
	if chain, err := s.ResponseChain(ctx, "resp_4"); err != nil || len(chain) != 2 {
		t.Errorf("resp_4's chain after deleting resp_2: %v, %v", ids(chain), err)
	}
}

func TestDeleteResponse(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	if err := s.SaveResponse(ctx, sampleResponse("resp_x", "")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteResponse(ctx, "resp_x"); err != nil {
		t.Fatalf("DeleteResponse: %v", err)
	}
	if _, err := s.Response(ctx, "resp_x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Response after delete: %v, want ErrNotFound", err)
	}
	if err := s.DeleteResponse(ctx, "resp_x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second DeleteResponse: %v, want ErrNotFound", err)
	}
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM responses`).Scan(&n); err != nil || n != 0 {
		t.Errorf("rows left after delete: %d, %v", n, err)
	}
}
