package models

import (
	"errors"
	"fmt"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestModelFaultIsNotQuarantined: a generation that fails because of the model (no finite
// logit: broken weights) never counts against its prompt, even when the failure also reads as
// a crash, so clients' retries of a good prompt are not refused as "quarantined".
func TestModelFaultIsNotQuarantined(t *testing.T) {
	fault := fmt.Errorf("%w (%w)", llm.ErrModelFault, errCrash)
	f := newFixture(t, 1, Config{}, func(_ string, r *fakeRunner) { r.genErr = fault })
	h := f.handle(t, "m0")
	for i := range 4 {
		if err := generate(h); !errors.Is(err, llm.ErrModelFault) || errors.Is(err, llm.ErrInvalidInput) {
			t.Fatalf("run %d: %v, want the model fault itself, not a quarantine", i+1, err)
		}
	}
	if n := f.runner(h.Entry().Path).gens.Load(); n != 4 {
		t.Fatalf("the worker ran the prompt %d times, want 4 (none refused)", n)
	}
}
