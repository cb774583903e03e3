package server_test

import (
	"testing"

	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core/qos"
)

// TestDefaultQoS: a request naming no class gets Config.DefaultQoS's (team mode's setting);
// a header still wins, and a default above the key's ceiling is lowered, not refused.
func TestDefaultQoS(t *testing.T) {
	class := qos.Background
	p := setupPolicy(t, server.Config{DefaultQoS: func() qos.Class { return class }}, 0, nil)
	for _, tc := range []struct {
		name   string
		key    string
		header string
		class  qos.Class
		want   llm.Priority
	}{
		{"the default", keyFree, "", qos.Background, llm.PriorityBackground},
		{"a header wins", keyFree, "interactive", qos.Background, llm.PriorityInteractive},
		{"no default", keyFree, "", qos.Unset, llm.PriorityInteractive},
		{"above the ceiling, lowered", keyBG, "", qos.Interactive, llm.PriorityInteractive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class = tc.class
			var opts []option.RequestOption
			if tc.header != "" {
				opts = append(opts, option.WithHeader("x-superfluid-qos", tc.header))
			}
			if _, err := p.chat(tc.key, "hi", opts...); err != nil {
				t.Fatal(err)
			}
			reqs := p.eng.Requests()
			if got := reqs[len(reqs)-1].Priority; got != tc.want {
				t.Errorf("engine priority %v, want %v", got, tc.want)
			}
		})
	}
}
