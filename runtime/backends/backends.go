// Package backends knows what this machine can run models on: the CPU backend built into the
// binary (with the CPU's vector features), and GPU backends installed as ggml backend libraries
// under <data>/runtimes/NAME/lib/ollama/ (scripts/build-runtime.sh builds them). A worker runs a
// model on a backend by getting its directory in OLLAMA_LIBRARY_PATH and offloading layers.
//
// Users, the settings and the API call a backend a "runtime" (the settings' runtime field, the
// runtimes data directory, the error messages): those names are on the wire and on disk and stay.
package backends

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// CPU is the name of the backend built into the binary.
const CPU = "cpu"

// Backend is one way to run a model.
type Backend struct {
	Name string `json:"name"`
	// Dir is the backend library directory (…/lib/ollama); "" for the built-in CPU backend.
	Dir string `json:"dir,omitempty"`
	// Library is the ggml backend library it loads ("ggml-vulkan", "ggml-cuda"); "" for the CPU.
	Library string `json:"backend,omitempty"`
	// Usable reports whether this machine can run it; Reason says why not.
	Usable bool   `json:"usable"`
	Reason string `json:"reason,omitempty"`
	// GPU reports whether models on it offload their layers to a device.
	GPU bool `json:"gpu"`
}

// Env is what a worker process needs in its environment to use the backend: the engine loads
// backends from OLLAMA_LIBRARY_PATH, and the backend finds the ggml base library beside it.
func (r Backend) Env() []string {
	if r.Dir == "" {
		return nil
	}
	ld := r.Dir
	if old := os.Getenv("LD_LIBRARY_PATH"); old != "" {
		ld += string(os.PathListSeparator) + old
	}
	return []string{"OLLAMA_LIBRARY_PATH=" + r.Dir, "LD_LIBRARY_PATH=" + ld}
}

// Machine is what the machine offers.
type Machine struct {
	CPUFeatures []string // of interest: avx2, avx512f, amx_int8, ...
	NVIDIA      string   // the driver version, "" when there is none
	Vulkan      []string // Vulkan driver manifests (ICDs) found
	Metal       bool
}

// Detect looks at the machine: /proc/cpuinfo, the NVIDIA driver, Vulkan ICD manifests, Metal.
func Detect() Machine {
	var m Machine
	m.CPUFeatures = cpuFeatures("/proc/cpuinfo")
	if b, err := os.ReadFile("/proc/driver/nvidia/version"); err == nil {
		m.NVIDIA = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	}
	for _, dir := range []string{"/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d"} {
		entries, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		m.Vulkan = append(m.Vulkan, entries...)
	}
	m.Metal = runtime.GOOS == "darwin" && runtime.GOARCH == "arm64"
	return m
}

// interesting are the CPU flags that decide how fast the CPU backend is.
var interesting = map[string]bool{"avx": true, "avx2": true, "fma": true, "f16c": true, "avx512f": true,
	"avx512_vnni": true, "avx512_bf16": true, "avx_vnni": true, "amx_int8": true, "amx_bf16": true, "amx_tile": true}

func cpuFeatures(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		key, value, ok := strings.Cut(s.Text(), ":")
		if !ok || strings.TrimSpace(key) != "flags" {
			continue
		}
		var out []string
		for _, flag := range strings.Fields(value) {
			if interesting[flag] {
				out = append(out, flag)
			}
		}
		sort.Strings(out)
		return out
	}
	return nil
}

// manifest is what build-runtime.sh writes beside a backend's libraries.
type manifest struct {
	Name    string `json:"name"`
	Backend string `json:"backend"`
}

// List is the built-in CPU backend and every backend installed under dataDir/runtimes, each
// marked usable or not on machine m.
func List(dataDir string, m Machine) []Backend {
	cpu := Backend{Name: CPU, Usable: true}
	if len(m.CPUFeatures) > 0 {
		cpu.Reason = "features: " + strings.Join(m.CPUFeatures, " ")
	}
	out := []Backend{cpu}
	dirs, _ := filepath.Glob(filepath.Join(dataDir, "runtimes", "*"))
	sort.Strings(dirs)
	for _, dir := range dirs {
		name := filepath.Base(dir)
		r := Backend{Name: name, Dir: filepath.Join(dir, "lib", "ollama"), GPU: true}
		var man manifest
		b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		if err == nil {
			err = json.Unmarshal(b, &man)
		}
		libs, _ := filepath.Glob(filepath.Join(r.Dir, "libggml-*.so*"))
		switch {
		case err != nil:
			r.Reason = fmt.Sprintf("no readable manifest.json: %v", err)
		case len(libs) == 0:
			r.Reason = "no backend library in " + r.Dir + "; run scripts/build-runtime.sh " + name
		default:
			r.Library = man.Backend
			r.Usable, r.Reason = m.supports(name)
		}
		out = append(out, r)
	}
	return out
}

// supports says whether the machine has the device a backend needs.
func (m Machine) supports(name string) (bool, string) {
	switch name {
	case "vulkan":
		if len(m.Vulkan) == 0 {
			return false, "no Vulkan driver is installed (e.g. mesa-vulkan-drivers, or the GPU vendor's)"
		}
		return true, ""
	case "cuda":
		if m.NVIDIA == "" {
			return false, "no NVIDIA driver is loaded"
		}
		return true, ""
	default:
		return true, ""
	}
}

// Find returns the named backend ("" means the CPU).
func Find(list []Backend, name string) (Backend, error) {
	if name == "" {
		name = CPU
	}
	for _, r := range list {
		if r.Name == name {
			if !r.Usable {
				return r, fmt.Errorf("the %s runtime cannot run here: %s", name, r.Reason)
			}
			return r, nil
		}
	}
	names := make([]string, 0, len(list))
	for _, r := range list {
		names = append(names, r.Name)
	}
	return Backend{}, fmt.Errorf("there is no %s runtime; installed: %s (scripts/build-runtime.sh builds vulkan and cuda)", name, strings.Join(names, ", "))
}
