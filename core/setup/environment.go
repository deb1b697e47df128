package setup

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// envVar is one environment variable and what chronos makes of it.
type envVar struct{ Name, about string }

// The environment variables chronos reads and sets, in one place: `chronos
// help environment` and the man page print them, and a test checks that
// the code reads and sets no other.
var (
	envRead = []envVar{
		{"CHRONOS_STORE", "the ledger, when --store and --db are not given: a file, or etcd://host:port,… shared by many hosts"},
		{"CHRONOS_DB", "the ledger file, when neither --store, --db nor CHRONOS_STORE is given"},
		{"CHRONOS_STORE_FILE", "the file naming a lab's ledger on etcd for every user of the host (/etc/chronos/store unless set)"},
		{"CHRONOS_NOTIFY_FILE", "root's file holding the webhook's address (/etc/chronos/notify unless set)"},
		{"CHRONOS_SOCKET", "the socket of a guarded ledger's keeper, root's monitor (/run/chronos/chronos.sock unless set)"},
		{"CHRONOS_HOST", "this host's name in a ledger many hosts share (the host name up to its first dot unless set)"},
		{"XDG_STATE_HOME", "the per-user ledger is $XDG_STATE_HOME/chronos/chronos.db (unset: ~/.local/state, from HOME)"},
		{"HOME", "see XDG_STATE_HOME"},
		{"CHRONOS_BACKEND", "the GPU backend: auto, nvml, drm or sim (--backend wins)"},
		{"CHRONOS_SIM_GPUS", "how many simulated GPUs (1 to 64; 4 unless set)"},
		{"CHRONOS_SIM_MEMORY", "each simulated GPU's memory, such as 141GiB (80GiB unless set)"},
		{"CHRONOS_DRM_ROOT", "the directory the drm backend reads sys/ and proc/ under (/ unless set; for fixtures)"},
		{"CUDA_MPS_PIPE_DIRECTORY", "where to look for an MPS control daemon (/tmp/nvidia-mps unless set)"},
		{"NO_COLOR", "set to anything: the app draws without colour, bold or reverse video"},
		{"GOGC", "the app's garbage collector target (unset: the app collects at half Go's default growth)"},
	}
	envOfProcesses = []envVar{
		{"CHRONOS_BOOKING_ID", "the booking a GPU process counts against, when it is its owner's or root's"},
		{"CHRONOS_PARTITION_ID", "its older name"},
		{"CUDA_VISIBLE_DEVICES", "which GPUs the process sees, for the over-budget check under MPS"},
		{"CUDA_MPS_PIPE_DIRECTORY", "which MPS daemon serves the process"},
		{"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "the memory limit MPS holds the process to"},
	}
	envSetByRun = []envVar{
		{"CHRONOS_BOOKING_ID", "the booking (and CHRONOS_PARTITION_ID, its older name)"},
		{"CHRONOS_PARTITION_ID", "see CHRONOS_BOOKING_ID"},
		{"CHRONOS_EXPIRES_AT", "the booking's end, RFC 3339"},
		{"CHRONOS_DEADLINE_UNIX", "the booking's end, seconds since 1970"},
		{"CHRONOS_RUN_PID", "the chronos run that signals the command at the end (root's monitor leaves it that)"},
		{"CUDA_VISIBLE_DEVICES", "the booked NVIDIA GPU by UUID (0 on AMD, within ROCR_VISIBLE_DEVICES)"},
		{"ROCR_VISIBLE_DEVICES", "the booked AMD GPU"},
		{"HIP_VISIBLE_DEVICES", "0: the one GPU ROCR_VISIBLE_DEVICES leaves"},
		{"ZE_AFFINITY_MASK", "the booked Intel GPU"},
		{"ZE_ENABLE_PCI_ID_DEVICE_ORDER", "1: Level Zero counts GPUs in PCI order, as chronos does"},
		{"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "while an MPS daemon runs: the booked memory"},
		{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "while an MPS daemon runs: the --compute cap"},
	}
)

// EnvSections are the tables with their titles.
var EnvSections = []struct {
	title string
	Vars  []envVar
}{
	{"chronos reads", envRead},
	{"chronos reads from each GPU process's environment (/proc/PID/environ)", envOfProcesses},
	{"chronos run sets for its command (the rest of your environment passes unchanged)", envSetByRun},
}

// EnvironmentText is the tables for a terminal.
func EnvironmentText() string {
	var b strings.Builder
	for i, s := range EnvSections {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "Variables %s:\n\n", s.title)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, v := range s.Vars {
			fmt.Fprintf(tw, "  %s\t%s\n", v.Name, v.about)
		}
		_ = tw.Flush()
	}
	return strings.TrimRight(b.String(), "\n")
}

// EnvironmentMarkdown is the tables as a man page's ENVIRONMENT section,
// in the markdown cobra's man generator reads.
func EnvironmentMarkdown() string {
	var b strings.Builder
	b.WriteString("# ENVIRONMENT\n")
	for _, s := range EnvSections {
		fmt.Fprintf(&b, "\nVariables %s:\n\n", s.title)
		for _, v := range s.Vars {
			fmt.Fprintf(&b, "**%s**\n: %s\n\n", v.Name, v.about)
		}
	}
	return b.String()
}
