package lanes

import (
	"fmt"
	"path/filepath"

	"github.com/superfluid/superfluid/runtime/backends"
)

// Device is one thing on the machine a lane can run on.
type Device struct {
	// Name is what lanes and bookings name it by: "cpu", "cuda:0", "metal:0", "vulkan:0", or
	// "remote" for a lane whose engine runs elsewhere (openai lanes only).
	Name string `json:"name"`
	// GPU reports whether it is an accelerator (a whole-GPU booking takes one).
	GPU bool `json:"gpu"`
}

// Remote is the device of an openai lane whose server runs on another machine.
const Remote = "remote"

// Devices are the machine's devices as runtime/backends sees it: the CPU, always (on a machine
// without a GPU it is the one device), then each NVIDIA GPU the driver lists, else one Metal or
// Vulkan device.
func Devices(m backends.Machine) []Device {
	gpus, _ := filepath.Glob("/proc/driver/nvidia/gpus/*")
	return devicesOf(m, len(gpus))
}

func devicesOf(m backends.Machine, nvidia int) []Device {
	out := []Device{{Name: backends.CPU}}
	switch {
	case m.NVIDIA != "":
		for i := range max(nvidia, 1) { // a driver that lists no GPU directory still has one
			out = append(out, Device{Name: fmt.Sprintf("cuda:%d", i), GPU: true})
		}
	case m.Metal:
		out = append(out, Device{Name: "metal:0", GPU: true})
	case len(m.Vulkan) > 0:
		out = append(out, Device{Name: "vulkan:0", GPU: true})
	}
	return out
}

// checkDevice is device as a lane of kind k may name it: one of devices, or Remote (also for
// an empty name) on an openai lane.
func checkDevice(devices []Device, k Kind, device string) (string, error) {
	if k == OpenAI && (device == "" || device == Remote) {
		return Remote, nil
	}
	for _, d := range devices {
		if d.Name == device {
			return device, nil
		}
	}
	names := make([]string, 0, len(devices))
	for _, d := range devices {
		names = append(names, d.Name)
	}
	return "", fmt.Errorf("%w %q: this machine has %v", ErrUnknownDevice, device, names)
}
