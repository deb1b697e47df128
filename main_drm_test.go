package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The real binary on the DRM fixture tree (two AMD GPUs, two Intel ones,
// processes on the host and in Docker, rootless Podman and Kubernetes):
// backends finds it, stats attributes and shows containers, and run shows
// the command only its booked GPU in ROCm's terms.
func TestDRMBackendEndToEnd(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	drmRoot := []string{"CHRONOS_DRM_ROOT=" + filepath.Join("gpu", "testdata", "drm", "multi")}
	chronos := func(t *testing.T, db string, args ...string) result {
		t.Helper()
		return runWith(t, chronosBin, db, nil, drmRoot, 0, args...)
	}

	r := chronos(t, db, "--backend", "auto", "backends")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "DRM:                 available (4 AMD or Intel GPU(s), read through the kernel)")
	require.Contains(t, r.stdout, "active backend:      drm")
	require.Contains(t, r.stdout, "AMD and Intel GPUs have no MPS")

	// uid 1000 owns the training job on GPU 1 (the MI210); root, the pod
	// on GPU 3.
	r = chronos(t, db, "--backend", "drm", "create", "1", "0.5", "1h", "--user", "1000")
	require.Equal(t, 0, r.code, r.stderr)
	r = chronos(t, db, "--backend", "drm", "create", "3", "50%", "1h")
	require.Equal(t, 0, r.code, r.stderr)

	r = chronos(t, db, "--backend", "drm", "stats")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Backend: drm")
	require.Contains(t, r.stdout, "GPU 1  AMD Instinct MI210")
	require.Contains(t, r.stdout, "note    utilization: not reported by i915")
	require.Contains(t, r.stdout, "memory  6 MiB used, 0 MiB booked (0%), size not reported")
	require.Contains(t, r.stdout, "CONTAINER")
	require.Contains(t, r.stdout, "llm-server")
	require.Contains(t, r.stdout, "rl-job")
	booked := 0
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(line)
		if len(f) > 6 && f[0] == "100" && f[5] == "#1" {
			booked++
		}
		if len(f) > 6 && f[0] == "700" {
			require.Equal(t, []string{"#2", "vllm"}, f[5:7], line)
		}
		if len(f) > 6 && f[0] == "200" {
			require.Equal(t, []string{"UNBOOKED", "llm-server"}, f[5:7], "booking 9 does not exist: %s", line)
		}
	}
	require.Equal(t, 1, booked, "the job counts against its owner's booking on GPU 1 only:\n%s", r.stdout)

	r = chronos(t, db, "--backend", "drm", "run", "1", "0.1", "1m", "--", "env")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "ROCR_VISIBLE_DEVICES=GPU-5a3c1b2f6d4e7a89\n")
	require.Contains(t, r.stdout, "HIP_VISIBLE_DEVICES=0\n")
	require.Contains(t, r.stdout, "CHRONOS_BOOKING_ID=3\n")
}

// A compute cap on an AMD or Intel GPU is recorded, not applied: create and
// run say so in those GPUs' terms (not NVIDIA's MPS advice), and list and
// show mark it.
//
// Serial: the in-process cli reads CHRONOS_DRM_ROOT from the process env.
func TestComputeCapOnDRMIsOnlyRecorded(t *testing.T) {
	t.Setenv("CHRONOS_DRM_ROOT", filepath.Join("gpu", "testdata", "drm", "multi"))
	db := filepath.Join(t.TempDir(), "chronos.db")
	const note = "chronos: note: the 50% compute cap is only recorded, not applied: AMD and Intel GPUs have no MPS here\n"
	r := cli(t, db, "--backend", "drm", "create", "1", "0.5", "1h", "--compute", "50%")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, note, r.stderr)
	r = cli(t, db, "--backend", "drm", "run", "1", "0.1", "1m", "--compute", "50%", "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "the 50% compute cap is only recorded, not applied: AMD and Intel GPUs have no MPS here")
	require.NotContains(t, r.stderr, "nvidia-cuda-mps-control")

	r = cli(t, db, "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^1\s.*\s50% of SMs \(not applied\)$`, r.stdout)
	r = cli(t, db, "show", "1")
	require.Contains(t, r.stdout, "50% of SMs (not applied)")

	// On an NVIDIA GPU (here simulated) the cap is applied where MPS runs:
	// list shows it plainly.
	sim := filepath.Join(t.TempDir(), "sim.db")
	require.Equal(t, 0, cli(t, sim, "create", "0", "0.5", "1h", "--compute", "50%").code)
	require.Regexp(t, `(?m)^1\s.*\s50% of SMs$`, cli(t, sim, "list").stdout)
}
