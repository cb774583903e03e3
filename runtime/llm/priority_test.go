package llm

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPriorityOnTheWire: a request's priority crosses the worker socket (JSON); interactive,
// the zero value, is left out.
func TestPriorityOnTheWire(t *testing.T) {
	for _, p := range []Priority{PriorityInteractive, PriorityBackground} {
		b, err := json.Marshal(Request{Prompt: "x", Priority: p})
		if err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(string(b), `"priority"`); has != (p != PriorityInteractive) {
			t.Errorf("priority %d encodes as %s", p, b)
		}
		var back Request
		if err := json.Unmarshal(b, &back); err != nil || back.Priority != p {
			t.Errorf("priority %d came back as %d (%v)", p, back.Priority, err)
		}
	}
}
