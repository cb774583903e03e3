package llamacpp

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// TestMediaUnderLoRA: an image prompt with an adapter replies differently from the same image
// prompt bare, and each replies what it replies alone when it runs beside the other: the
// image prefilling while the other lane decodes (one llama_decode per adapter set, then the
// chunk), in both directions. Its chunk's KV is computed under its own lane's set, whichever
// set the tick decoded last.
func TestMediaUnderLoRA(t *testing.T) {
	f := writeMediaFiles(t)[0]
	lora := filepath.Join(t.TempDir(), "lora.gguf")
	if err := gguftest.WriteLoRA(lora, f.model, gguftest.LoRAOptions{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	e := loadMedia(t, f.model, f.vision, 2)
	img := testImage(24, 20, 5)
	// NoCache: every run evaluates the chunk again rather than reuse an earlier run's KV.
	req := func(withAdapter bool, tokens int) *llm.Request {
		r := mediaReq(mediaPrefix, mediaSuffix, tokens, img)
		r.IgnoreEOS, r.NoCache = true, true
		if withAdapter {
			r.Adapters = []llm.AdapterRef{adapter("a", lora, 1)}
		}
		return r
	}
	const long, short = 160, 24
	solo := map[bool]map[int]string{}
	for _, withAdapter := range []bool{true, false} {
		solo[withAdapter] = map[int]string{}
		for _, n := range []int{long, short} {
			solo[withAdapter][n] = mustGenerate(t, e, req(withAdapter, n)).text
		}
	}
	if solo[true][long] == solo[false][long] {
		t.Fatalf("the image prompt replies %q with the adapter and without; want the adapter to change it", solo[true][long])
	}

	// The first request decodes a long reply; the second starts once the first has text out
	// and prefills its image beside it. A run counts when the second ended before the first.
	overlapped := map[bool]int{}
	for attempt := 0; attempt < 40 && (overlapped[true] < 4 || overlapped[false] < 4); attempt++ {
		firstHasAdapter := attempt%2 == 0
		var firstText, secondText strings.Builder
		var mu sync.Mutex
		firstDone, secondDone := false, false
		begin := make(chan struct{})
		var once sync.Once
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			err := e.Generate(context.Background(), req(firstHasAdapter, long), func(ev llm.Event) error {
				firstText.WriteString(ev.Text)
				if ev.Text != "" {
					once.Do(func() { close(begin) })
				}
				return nil
			})
			once.Do(func() { close(begin) })
			mu.Lock()
			firstDone = true
			mu.Unlock()
			if err != nil {
				t.Errorf("first request: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			<-begin
			err := e.Generate(context.Background(), req(!firstHasAdapter, short), func(ev llm.Event) error {
				secondText.WriteString(ev.Text)
				return nil
			})
			mu.Lock()
			secondDone = !firstDone
			mu.Unlock()
			if err != nil {
				t.Errorf("second request: %v", err)
			}
		}()
		wg.Wait()
		if got, want := firstText.String(), solo[firstHasAdapter][long]; got != want {
			t.Errorf("attempt %d: the first request (adapter %t) wrote %q beside an image prefill, alone %q", attempt, firstHasAdapter, got, want)
		}
		if !secondDone {
			continue // the first ended before the second's image went in: nothing side by side
		}
		overlapped[!firstHasAdapter]++
		if got, want := secondText.String(), solo[!firstHasAdapter][short]; got != want {
			t.Errorf("attempt %d: the image prompt (adapter %t) prefilled beside a decoding lane wrote %q, alone %q",
				attempt, !firstHasAdapter, got, want)
		}
	}
	t.Logf("image prefills beside the other set: %d with the adapter, %d bare", overlapped[true], overlapped[false])
	if overlapped[true] == 0 || overlapped[false] == 0 {
		t.Fatalf("the image prompts never ran beside the other set (with the adapter %d times, bare %d)", overlapped[true], overlapped[false])
	}
}
