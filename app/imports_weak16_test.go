package app

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportFuzzWorkerAsProcess: the fuzz targets that drive the real llama.cpp (FuzzCheck's
// grammar compile in runtime/schema, FuzzTokenize in runtime/worker) reach it through a worker
// process, never by linking it: their test binaries depend neither on runtime/llamacpp nor on
// the cgo llama package, so runtime/llamacpp stays the only cgo package and a llama.cpp crash
// costs the worker, not the fuzzer. runtime/schema itself imports nothing of the module but
// runtime/llm.
func TestImportFuzzWorkerAsProcess(t *testing.T) {
	graph := moduleGraph(t)
	mustSee(t, graph, "runtime/schema", "runtime/worker", "runtime/llamacpp")
	for _, p := range graph {
		if p.Rel != "runtime/schema" {
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) && imp != module+"runtime/llm" {
				t.Errorf("runtime/schema imports %s; it may import only runtime/llm of the module", imp)
			}
		}
	}
	for _, pkg := range []string{"runtime/schema", "runtime/worker"} {
		out, err := exec.Command("go", "list", "-test", "-deps", module+pkg).Output()
		if err != nil {
			t.Fatalf("go list -test -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if d, ok := hasPrefix(deps, module+"runtime/llamacpp"); ok {
			t.Errorf("the tests of %s depend on %s; they must drive llama.cpp through a worker process", pkg, d)
		}
		for _, d := range deps {
			if d == llamaPackage {
				t.Errorf("the tests of %s depend on %s; they must drive llama.cpp through a worker process", pkg, d)
			}
		}
	}
}
