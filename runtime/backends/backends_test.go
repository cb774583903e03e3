package backends

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCPUFeatures(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpuinfo")
	os.WriteFile(path, []byte("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma avx512f amx_int8 xyz\nprocessor\t: 1\n"), 0o644)
	if got := strings.Join(cpuFeatures(path), " "); got != "amx_int8 avx avx2 avx512f fma" {
		t.Fatalf("features %q", got)
	}
}

func TestList(t *testing.T) {
	data := t.TempDir()
	install := func(name string, lib bool) {
		dir := filepath.Join(data, "runtimes", name, "lib", "ollama")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(data, "runtimes", name, "manifest.json"), []byte(`{"name":"`+name+`","backend":"ggml-`+name+`"}`), 0o644)
		if lib {
			os.WriteFile(filepath.Join(dir, "libggml-"+name+".so"), []byte("x"), 0o644)
		}
	}
	install("vulkan", true)
	install("cuda", true)
	install("broken", false)
	list := List(data, Machine{Vulkan: []string{"/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"}})
	var names []string
	for _, r := range list {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "cpu,broken,cuda,vulkan" {
		t.Fatalf("runtimes %v", names)
	}
	if _, err := Find(list, ""); err != nil {
		t.Fatal("the CPU runtime is always usable")
	}
	vk, err := Find(list, "vulkan")
	if err != nil || !vk.GPU || vk.Library != "ggml-vulkan" || len(vk.Env()) != 2 || !strings.Contains(vk.Env()[0], filepath.Join("vulkan", "lib", "ollama")) {
		t.Fatalf("vulkan %+v %v", vk, err)
	}
	if _, err := Find(list, "cuda"); err == nil || !strings.Contains(err.Error(), "NVIDIA") {
		t.Fatalf("cuda without a driver: %v", err)
	}
	if _, err := Find(list, "broken"); err == nil || !strings.Contains(err.Error(), "build-runtime.sh") {
		t.Fatalf("a runtime without libraries: %v", err)
	}
	if _, err := Find(list, "metal"); err == nil || !strings.Contains(err.Error(), "installed: cpu") {
		t.Fatalf("a missing runtime: %v", err)
	}
	if list := List(data, Machine{}); list[3].Usable {
		t.Fatal("vulkan usable with no Vulkan driver")
	}
}
