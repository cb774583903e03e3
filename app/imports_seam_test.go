package app

import "testing"

// TestImportEngineSeam: the core, the router and the dialects know engines only through their
// interfaces (llm.Engine for one that runs prompts, core.RequestEngine for one that takes the
// typed request), so a new engine kind (a forwarding engine) is added without touching them:
// none depends on an engine's implementation (the worker and its client, llama.cpp, the fake
// engines) or on the test-support packages.
func TestImportEngineSeam(t *testing.T) {
	seamUsers := map[string]bool{"server": true, "server/core": true, "server/batches": true, "server/openai": true, "server/anthropic": true, "server/ollama": true}
	engines := []string{"runtime/worker", "runtime/llamacpp", "runtime/enginetest", "server/servertest"}
	graph := moduleGraph(t)
	for rel := range seamUsers {
		mustSee(t, graph, rel)
	}
	mustSee(t, graph, engines...)
	for _, p := range graph {
		if !seamUsers[p.Rel] {
			continue
		}
		for _, e := range engines {
			if d, ok := hasPrefix(p.Deps, module+e); ok {
				t.Errorf("%s depends on %s; it must know engines only through llm.Engine and core.RequestEngine", p.Rel, d)
			}
		}
	}
}
