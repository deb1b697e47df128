package gpu

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Backend kinds accepted by Open.
const (
	KindAuto = "auto"
	KindNVML = "nvml"
	KindDRM  = "drm"
	KindSim  = "sim"
)

// BackendEnv selects the backend: auto, nvml, drm or sim.
const BackendEnv = "CHRONOS_BACKEND"

// openNVML is OpenNVML; tests replace it to act out machines without a GPU.
var openNVML = OpenNVML

// KindFromEnv is CHRONOS_BACKEND, "" when unset.
func KindFromEnv() string {
	return strings.TrimSpace(os.Getenv(BackendEnv))
}

// Open picks a backend. kind is "auto" (or ""), "nvml", "drm" or "sim" (or
// "simulated"). Auto uses NVML when it initialises with at least one GPU,
// else the kernel's DRM interface when it shows an AMD or Intel GPU, and
// otherwise simulated GPUs, saying why in notice. A forced backend that is
// not available is an error, never a silent fallback.
func Open(kind string) (b Backend, notice string, err error) {
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case "", KindAuto:
		n, nvmlErr := openNVMLWithDevices()
		if nvmlErr == nil {
			return n, "", nil
		}
		d, drmErr := OpenDRM(DRMOptions{})
		if drmErr == nil {
			return d, "", nil
		}
		sim, simErr := openSim()
		if simErr != nil {
			return nil, "", simErr
		}
		why := nvmlErr.Error()
		if !errors.Is(drmErr, ErrNoDRMGPUs) {
			why += "; " + drmErr.Error()
		}
		return sim, fmt.Sprintf("no NVIDIA, AMD or Intel GPU found (%s); showing simulated GPUs", why), nil
	case KindNVML:
		n, err := openNVMLWithDevices()
		if err != nil {
			return nil, "", fmt.Errorf("nvml backend unavailable: %w", err)
		}
		return n, "", nil
	case KindDRM:
		d, err := OpenDRM(DRMOptions{})
		if err != nil {
			return nil, "", fmt.Errorf("drm backend unavailable: %w", err)
		}
		return d, "", nil
	case KindSim, "simulated":
		sim, err := openSim()
		if err != nil {
			return nil, "", err
		}
		return sim, "", nil
	default:
		return nil, "", fmt.Errorf("unknown GPU backend %q: use auto, nvml, drm or sim", kind)
	}
}

// errNoGPUs means NVML works but reports no devices.
var errNoGPUs = errors.New("NVML: the driver reports no GPUs")

func openNVMLWithDevices() (*NVML, error) {
	n, err := openNVML()
	if err != nil {
		return nil, err
	}
	if len(n.devices) == 0 {
		_ = n.Close()
		return nil, errNoGPUs
	}
	return n, nil
}

func openSim() (*Sim, error) {
	opts, err := SimOptionsFromEnv()
	if err != nil {
		return nil, fmt.Errorf("simulated GPUs: %w", err)
	}
	return NewSim(opts), nil
}
