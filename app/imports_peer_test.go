package app

import "testing"

// TestImportPeerTest: app/peertest (the real Ollama server as a test peer) is for tests only, so
// no package of the module depends on it outside its _test files; and it imports nothing of the
// module, so a test anywhere (server/..., runtime/..., app) may use it without an upward arrow.
func TestImportPeerTest(t *testing.T) {
	const peer = "app/peertest"
	graph := moduleGraph(t)
	mustSee(t, graph, peer)
	for _, p := range graph {
		if p.Rel == peer {
			if d, ok := hasPrefix(p.Deps, module); ok {
				t.Errorf("%s depends on %s; it must import nothing of the module", peer, d)
			}
			continue
		}
		if d, ok := hasPrefix(p.Deps, module+peer); ok {
			t.Errorf("%s depends on %s; test support is for _test files only", p.Rel, d)
		}
	}
}
