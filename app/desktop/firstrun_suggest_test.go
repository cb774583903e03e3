package desktop_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/tray"
)

// fakeQuants sizes every repository's quantizations as a machine with free bytes does: each
// model's Q4_K_M and Q8_0, the weights taking params × bits/8 and the window 10% more.
type fakeQuants struct {
	free   int64
	err    error
	params map[string]int64 // by repository; a repository not here is not on the Hub
	asked  []string
}

func (f *fakeQuants) HubQuants(_ context.Context, repo string, ctxLen, lanes int) ([]desktop.HubQuant, error) {
	f.asked = append(f.asked, repo)
	if f.err != nil {
		return nil, f.err
	}
	p, ok := f.params[repo]
	if !ok {
		return nil, errors.New("404: no such repository")
	}
	var out []desktop.HubQuant
	for _, q := range []struct {
		name string
		bits int64
	}{{"Q4_K_M", 5}, {"Q8_0", 9}} {
		size := p * q.bits / 8
		need := size + size/10
		out = append(out, desktop.HubQuant{Quant: q.name, Reference: "hf.co/" + repo + ":" + q.name, Size: size, Need: need, Free: f.free, Fits: need <= f.free})
	}
	// The search preselects the largest that fits.
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Fits {
			out[i].Best = true
			break
		}
	}
	return out, nil
}

func suggestWith(t *testing.T, q desktop.HubQuants) (tray.Suggestion, error) {
	cat := servertest.NewCatalog(t, models.Config{})
	c := desktop.New(desktop.Deps{Service: cat.Svc, Store: cat.Store, Handler: http.NotFoundHandler(), Host: "127.0.0.1", Port: 1,
		Expose: func(string) error { return nil }, StopBackground: func(context.Context) error { return nil },
		StartBackground: func() error { return nil }, Runtimes: func() []backends.Backend { return nil }, Quants: q})
	t.Cleanup(c.Close)
	return c.Suggestion(context.Background())
}

// TestSuggestion: the largest listed model with a quantization that leaves a quarter of the
// memory free is suggested, its preselected quantization when that is roomy; offline it says
// so and suggests nothing, as when nothing fits or no Hub search is wired.
func TestSuggestion(t *testing.T) {
	const gb = int64(1e9)
	onHub := map[string]int64{
		"unsloth/Qwen3-0.6B-GGUF": 6e8, "unsloth/gemma-3-1b-it-GGUF": 1e9, "bartowski/Llama-3.2-1B-Instruct-GGUF": 12e8,
		"unsloth/Qwen3-1.7B-GGUF": 17e8, "bartowski/Llama-3.2-3B-Instruct-GGUF": 32e8, "unsloth/Qwen3-4B-GGUF": 4e9,
	}
	tests := []struct {
		name      string
		q         *fakeQuants
		reference string
		note      string
	}{
		// 16 GB: Qwen3 4B Q8_0 needs 4.95 GB, well within three quarters.
		{"plenty", &fakeQuants{free: 16 * gb, params: onHub}, "hf.co/unsloth/Qwen3-4B-GGUF:Q8_0", ""},
		// 3 GB: Qwen3 4B's Q4_K_M needs 2.75 GB (it fits, without room to spare); Llama 3.2
		// 3B's Q4_K_M needs 2.2 GB, within three quarters of 3 GB (its Q8_0 does not fit).
		{"small", &fakeQuants{free: 3 * gb, params: onHub}, "hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M", ""},
		// The 4B repository is gone: the next one down.
		{"a repository missing", &fakeQuants{free: 16 * gb, params: map[string]int64{"unsloth/Qwen3-1.7B-GGUF": 17e8}}, "hf.co/unsloth/Qwen3-1.7B-GGUF:Q8_0", ""},
		{"offline", &fakeQuants{err: errors.New(`Get "https://huggingface.co/api/models/x": dial tcp: lookup huggingface.co: no such host`)}, "", "Offline: the Hub could not be reached (no such host)"},
		{"nothing fits", &fakeQuants{free: 2e8, params: onHub}, "", "None of the small models suggested here fits in the 200 MB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := suggestWith(t, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if s.Reference != tt.reference || !strings.HasPrefix(s.Note, tt.note) {
				t.Fatalf("got %+v, want %q / %q", s, tt.reference, tt.note)
			}
			if tt.reference != "" && (s.Name == "" || s.Size == 0 || s.Need == 0 || s.Free == 0 || s.Need > s.Free*3/4) {
				t.Fatalf("suggestion without room to spare or facts: %+v", s)
			}
			if tt.name == "offline" && len(tt.q.asked) != 6 {
				t.Fatalf("asked %v", tt.q.asked)
			}
		})
	}
	s, err := suggestWith(t, nil)
	if err != nil || s.Reference != "" || !strings.Contains(s.Note, "No Hub search") {
		t.Fatalf("without a Hub search: %+v %v", s, err)
	}
}

// unspellable is fakeQuants with the quantizations of repo at paths no reference can name
// (Reference "", as the Hub source lists a file under a folder with a space).
type unspellable struct {
	*fakeQuants
	repo string
}

func (u unspellable) HubQuants(ctx context.Context, repo string, ctxLen, lanes int) ([]desktop.HubQuant, error) {
	out, err := u.fakeQuants.HubQuants(ctx, repo, ctxLen, lanes)
	for i := range out {
		if repo == u.repo {
			out[i].Reference = ""
		}
	}
	return out, err
}

// TestSuggestionSkipsUnpullable: a quantization no reference can pull is never suggested: the
// next model down is, rather than no suggestion at all ("none fits").
func TestSuggestionSkipsUnpullable(t *testing.T) {
	q := &fakeQuants{free: 16e9, params: map[string]int64{"bartowski/Llama-3.2-3B-Instruct-GGUF": 32e8, "unsloth/Qwen3-4B-GGUF": 4e9}}
	s, err := suggestWith(t, unspellable{q, "unsloth/Qwen3-4B-GGUF"})
	if err != nil || s.Reference != "hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q8_0" {
		t.Fatalf("got %+v, %v; want Llama 3.2 3B's Q8_0", s, err)
	}
}
