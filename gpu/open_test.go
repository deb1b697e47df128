package gpu

import (
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/require"
)

// withNVML makes Open see lib instead of the system's NVML.
func withNVML(t *testing.T, lib nvml.Interface) {
	t.Helper()
	prev := openNVML
	openNVML = func() (*NVML, error) { return NewNVML(lib) }
	t.Cleanup(func() { openNVML = prev })
}

func noDriver() nvml.Interface {
	return &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
}

// withoutDRMGPUs makes Open see a machine whose only display is a VM's.
func withoutDRMGPUs(t *testing.T) { t.Setenv(DRMRootEnv, fixture("vm")) }

func TestOpenWithoutDriver(t *testing.T) {
	withNVML(t, noDriver())
	withoutDRMGPUs(t)
	t.Setenv("CHRONOS_SIM_GPUS", "")
	t.Setenv("CHRONOS_SIM_MEMORY", "")

	for _, kind := range []string{"", "auto", " AUTO "} {
		b, notice, err := Open(kind)
		require.NoError(t, err, kind)
		require.True(t, b.Simulated())
		require.Equal(t, "simulated", b.Name())
		require.Equal(t, "no NVIDIA, AMD or Intel GPU found (NVML: libnvidia-ml.so.1 not found — is the NVIDIA driver installed?); showing simulated GPUs", notice)
		require.NoError(t, b.Close())
	}

	_, _, err := Open("nvml")
	require.ErrorIs(t, err, nvml.ERROR_LIBRARY_NOT_FOUND)
	require.EqualError(t, err, "nvml backend unavailable: NVML: libnvidia-ml.so.1 not found — is the NVIDIA driver installed?")
}

func TestOpenSim(t *testing.T) {
	withNVML(t, noDriver())
	withoutDRMGPUs(t)
	t.Setenv("CHRONOS_SIM_GPUS", "2")
	t.Setenv("CHRONOS_SIM_MEMORY", "141GiB")
	for _, kind := range []string{"sim", "simulated", "Sim"} {
		b, notice, err := Open(kind)
		require.NoError(t, err)
		require.Empty(t, notice, "asked for simulated GPUs: nothing to explain")
		devs, err := b.Devices()
		require.NoError(t, err)
		require.Len(t, devs, 2)
		require.Equal(t, 141*gib, devs[0].MemoryTotal)
	}

	t.Setenv("CHRONOS_SIM_GPUS", "100")
	for _, kind := range []string{"sim", "auto"} {
		_, _, err := Open(kind)
		require.ErrorContains(t, err, "CHRONOS_SIM_GPUS", kind)
	}
}

func TestOpenPrefersNVML(t *testing.T) {
	t.Parallel()
	shutdowns := 0
	withNVML(t, fakeLibrary([]*fakeGPU{h200(0)}, &shutdowns))
	b, notice, err := Open("auto")
	require.NoError(t, err)
	require.Empty(t, notice)
	require.Equal(t, "nvml", b.Name())
	require.False(t, b.Simulated())
	require.NoError(t, b.Close())
	require.Equal(t, 1, shutdowns)
}

func TestOpenNVMLWithoutGPUs(t *testing.T) {
	shutdowns := 0
	withNVML(t, fakeLibrary(nil, &shutdowns))
	withoutDRMGPUs(t)

	b, notice, err := Open("auto")
	require.NoError(t, err)
	require.True(t, b.Simulated())
	require.Contains(t, notice, "no GPUs")
	require.Equal(t, 1, shutdowns, "the unused NVML is shut down")

	_, _, err = Open("nvml")
	require.ErrorContains(t, err, "reports no GPUs")
}

func TestOpenUnknownKind(t *testing.T) {
	t.Parallel()
	_, _, err := Open("cuda")
	require.EqualError(t, err, `unknown GPU backend "cuda": use auto, nvml, drm or sim`)
}

func TestKindFromEnv(t *testing.T) {
	t.Setenv(BackendEnv, " sim\n")
	require.Equal(t, "sim", KindFromEnv())
	t.Setenv(BackendEnv, "")
	require.Equal(t, "", KindFromEnv())
}

// The real library: on a machine without a driver this must fail cleanly
// (no panic, a person's message); on a GPU machine it must read.
func TestOpenNVMLReal(t *testing.T) {
	t.Parallel()
	n, err := OpenNVML()
	if err != nil {
		require.ErrorContains(t, err, "NVML: ")
		t.Logf("no NVML here: %v", err)
		return
	}
	defer func() { require.NoError(t, n.Close()) }()
	s, err := n.Sample()
	require.NoError(t, err)
	require.Len(t, s.Devices, len(n.devices))
	for _, d := range s.Devices {
		require.NotEmpty(t, d.UUID)
		require.NotZero(t, d.MemoryTotal)
		t.Logf("%d %s %s driver %s: %d%% util, %d processes, notes %v", d.Index, d.UUID, d.Name, n.DriverVersion(), d.Util, len(d.Processes), d.Notes)
	}
}

// One decision serves gpu.Open and `chronos backends`: which backend a
// kind gets, given what NVML answered.
func TestParseKindAndPick(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Kind{"": KindAuto, " Auto ": KindAuto, "NVML": KindNVML, "drm": KindDRM, "sim": KindSim, "simulated": KindSim} {
		got, err := ParseKind(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := ParseKind("cuda")
	require.ErrorIs(t, err, ErrUnknownKind)

	noLib, noDRM := errors.New("no libnvidia-ml"), ErrNoDRMGPUs
	for _, tc := range []struct {
		kind            Kind
		nvmlErr, drmErr error
		want            Kind
		err             string
	}{
		{KindAuto, nil, noDRM, KindNVML, ""},
		{KindAuto, nil, nil, KindNVML, ""},
		{KindAuto, noLib, nil, KindDRM, ""},
		{KindAuto, noLib, noDRM, KindSim, ""},
		{KindAuto, ErrNoGPUs, noDRM, KindSim, ""},
		{KindNVML, nil, noDRM, KindNVML, ""},
		{KindNVML, noLib, nil, "", "nvml backend unavailable: no libnvidia-ml"},
		{KindDRM, nil, nil, KindDRM, ""},
		{KindDRM, nil, noDRM, "", "drm backend unavailable: " + noDRM.Error()},
		{KindSim, nil, nil, KindSim, ""},
	} {
		got, err := Pick(tc.kind, tc.nvmlErr, tc.drmErr)
		if tc.err != "" {
			require.EqualError(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "%s with NVML %v, DRM %v", tc.kind, tc.nvmlErr, tc.drmErr)
	}
}
