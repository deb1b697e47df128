package gpu

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Kind is a GPU backend a person can ask for.
type Kind string

// The kinds ParseKind accepts.
const (
	KindAuto Kind = "auto" // NVML when it has GPUs, else simulated
	KindNVML Kind = "nvml"
	KindSim  Kind = "sim"
)

// BackendEnv selects the backend: auto, nvml or sim.
const BackendEnv = "CHRONOS_BACKEND"

// ErrUnknownKind means a backend was asked for by a name chronos does not know.
var ErrUnknownKind = errors.New("unknown GPU backend")

// openNVML is OpenNVML; tests replace it to act out machines without a GPU.
var openNVML = OpenNVML

// KindFromEnv is CHRONOS_BACKEND, "" when unset.
func KindFromEnv() string {
	return strings.TrimSpace(os.Getenv(BackendEnv))
}

// ParseKind reads a backend's name: "auto" (or ""), "nvml", or "sim" (or
// "simulated"), in any case.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(strings.ToLower(strings.TrimSpace(s))); k {
	case "", KindAuto:
		return KindAuto, nil
	case KindNVML, KindSim:
		return k, nil
	case "simulated":
		return KindSim, nil
	}
	return "", fmt.Errorf("%w %q: use auto, nvml or sim", ErrUnknownKind, s)
}

// Pick is the backend that serves kind, given whether NVML started with
// GPUs (nvmlErr nil) or why not: auto falls back to simulated GPUs, a
// forced backend that is not available is an error, never a fallback.
func Pick(kind Kind, nvmlErr error) (Kind, error) {
	switch {
	case kind == KindSim:
		return KindSim, nil
	case nvmlErr == nil:
		return KindNVML, nil
	case kind == KindNVML:
		return "", fmt.Errorf("nvml backend unavailable: %w", nvmlErr)
	}
	return KindSim, nil
}

// Open starts the backend that serves kind (see ParseKind and Pick). When
// auto falls back to simulated GPUs, notice says why.
func Open(kind string) (b Backend, notice string, err error) {
	k, err := ParseKind(kind)
	if err != nil {
		return nil, "", err
	}
	var n *NVML
	var nvmlErr error
	if k != KindSim {
		n, nvmlErr = openNVMLWithDevices()
	}
	use, err := Pick(k, nvmlErr)
	if err != nil {
		return nil, "", err
	}
	if use == KindNVML {
		return n, "", nil
	}
	sim, err := openSim()
	if err != nil {
		return nil, "", err
	}
	if nvmlErr != nil {
		notice = fmt.Sprintf("no NVIDIA GPU found (%v); showing simulated GPUs", nvmlErr)
	}
	return sim, notice, nil
}

// ErrNoGPUs means NVML works but reports no devices.
var ErrNoGPUs = errors.New("NVML: the driver reports no GPUs")

func openNVMLWithDevices() (*NVML, error) {
	n, err := openNVML()
	if err != nil {
		return nil, err
	}
	if len(n.devices) == 0 {
		_ = n.Close()
		return nil, ErrNoGPUs
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
