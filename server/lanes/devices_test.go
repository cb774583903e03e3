package lanes

import (
	"errors"
	"reflect"
	"testing"

	"github.com/superfluid/superfluid/runtime/backends"
)

// TestDevices: the CPU is always a device (the only one without a GPU); each NVIDIA GPU is
// one; Metal or Vulkan add one; an openai lane may sit on the remote device, no other may.
func TestDevices(t *testing.T) {
	names := func(ds []Device) (out []string) {
		for _, d := range ds {
			out = append(out, d.Name)
		}
		return out
	}
	for _, tc := range []struct {
		m      backends.Machine
		nvidia int
		want   []string
	}{
		{backends.Machine{}, 0, []string{"cpu"}},
		{backends.Machine{NVIDIA: "NVRM 550"}, 2, []string{"cpu", "cuda:0", "cuda:1"}},
		{backends.Machine{NVIDIA: "NVRM 550"}, 0, []string{"cpu", "cuda:0"}},
		{backends.Machine{Metal: true}, 0, []string{"cpu", "metal:0"}},
		{backends.Machine{Vulkan: []string{"/usr/share/vulkan/icd.d/radeon.json"}}, 0, []string{"cpu", "vulkan:0"}},
	} {
		if got := names(devicesOf(tc.m, tc.nvidia)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.m, got, tc.want)
		}
	}
	if len(Devices(backends.Detect())) == 0 {
		t.Fatal("this machine has no device")
	}
	cpu := devicesOf(backends.Machine{}, 0)
	if d, err := checkDevice(cpu, OpenAI, ""); err != nil || d != Remote {
		t.Fatalf("openai without device: %q %v", d, err)
	}
	if _, err := checkDevice(cpu, Command, Remote); !errors.Is(err, ErrUnknownDevice) {
		t.Fatalf("command on remote: %v", err)
	}
}
