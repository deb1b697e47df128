package tui

import (
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/gpu"
)

// On the DRM fixture (AMD and Intel GPUs, processes in Docker, rootless
// Podman and a Kubernetes pod) the processes view gains a CONTAINER
// column, and every line still fits.
func TestProcessesShowContainers(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 4)
	drm, err := gpu.OpenDRM(gpu.DRMOptions{Root: filepath.Join("..", "gpu", "testdata", "drm", "multi"), Now: w.clock.Now})
	require.NoError(t, err)
	opts := w.options()
	opts.Backend, opts.Notice = drm, ""
	for _, size := range [][2]int{{80, 24}, {140, 40}} {
		m := New(opts)
		m = update(t, m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		m = run(t, m, sampleCmd(drm))
		m = run(t, m, loadCmd(w.client, false, 0))
		m = press(t, m, "tab")
		v := m.View()
		for _, want := range []string{"Chronos · DRM", "CONTAINER", "llm-server", "rl-job", "vllm"} {
			require.Contains(t, v, want, "%v", size)
		}
		lines := strings.Split(v, "\n")
		require.Len(t, lines, size[1])
		for i, line := range lines {
			require.LessOrEqual(t, ansi.StringWidth(line), size[0], "%v line %d: %q", size, i, line)
		}
	}

	m := w.model(140, 40)
	m = press(t, m, "tab")
	require.NotContains(t, m.View(), "CONTAINER", "simulated processes run in no container: no column")
}
