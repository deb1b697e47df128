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
	KindAuto Kind = "auto" // NVML when it has GPUs, else DRM when it has, else simulated
	KindNVML Kind = "nvml"
	KindDRM  Kind = "drm"
	KindSim  Kind = "sim"
)

// Kinds are the backends a person can ask for, auto first.
var Kinds = []Kind{KindAuto, KindNVML, KindDRM, KindSim}

// BackendEnv selects the backend: auto, nvml, drm or sim.
const BackendEnv = "CHRONOS_BACKEND"

// ErrUnknownKind means a backend was asked for by a name chronos does not know.
var ErrUnknownKind = errors.New("unknown GPU backend")

// openNVML is OpenNVML; tests replace it to act out machines without a GPU.
var openNVML = OpenNVML

// KindFromEnv is CHRONOS_BACKEND, "" when unset.
func KindFromEnv() string {
	return strings.TrimSpace(os.Getenv(BackendEnv))
}

// ParseKind reads a backend's name: "auto" (or ""), "nvml", "drm", or "sim"
// (or "simulated"), in any case.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(strings.ToLower(strings.TrimSpace(s))); k {
	case "", KindAuto:
		return KindAuto, nil
	case KindNVML, KindDRM, KindSim:
		return k, nil
	case "simulated":
		return KindSim, nil
	}
	return "", fmt.Errorf("%w %q: use auto, nvml, drm or sim", ErrUnknownKind, s)
}

// errNotTried stands for a backend Open did not need to try.
var errNotTried = errors.New("not tried")

// Pick is the backend that serves kind, given whether NVML and DRM started
// with GPUs (a nil error) or why not: auto prefers NVML, then DRM, then
// simulated GPUs; a forced backend that is not available is an error, never
// a fallback.
func Pick(kind Kind, nvmlErr, drmErr error) (Kind, error) {
	switch kind {
	case KindSim:
		return KindSim, nil
	case KindNVML:
		if nvmlErr != nil {
			return "", fmt.Errorf("nvml backend unavailable: %w", nvmlErr)
		}
		return KindNVML, nil
	case KindDRM:
		if drmErr != nil {
			return "", fmt.Errorf("drm backend unavailable: %w", drmErr)
		}
		return KindDRM, nil
	}
	switch {
	case nvmlErr == nil:
		return KindNVML, nil
	case drmErr == nil:
		return KindDRM, nil
	}
	return KindSim, nil
}

// Open starts the backend that serves kind (see ParseKind and Pick),
// trying only what that takes. When auto falls back to simulated GPUs,
// notice says why.
func Open(kind string) (b Backend, notice string, err error) {
	k, err := ParseKind(kind)
	if err != nil {
		return nil, "", err
	}
	var n *NVML
	var d *DRM
	nvmlErr, drmErr := errNotTried, errNotTried
	if k == KindAuto || k == KindNVML {
		n, nvmlErr = openNVMLWithDevices()
	}
	if k == KindDRM || k == KindAuto && nvmlErr != nil {
		d, drmErr = OpenDRM(DRMOptions{})
	}
	use, err := Pick(k, nvmlErr, drmErr)
	switch {
	case err != nil:
		return nil, "", err
	case use == KindNVML:
		return n, "", nil
	case use == KindDRM:
		return d, "", nil
	}
	sim, err := openSim()
	if err != nil {
		return nil, "", err
	}
	if k == KindAuto {
		why := nvmlErr.Error()
		if !errors.Is(drmErr, ErrNoDRMGPUs) {
			why += "; " + drmErr.Error()
		}
		notice = fmt.Sprintf("no NVIDIA, AMD or Intel GPU found (%s); showing simulated GPUs", why)
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
