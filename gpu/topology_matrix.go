package gpu

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The cells of `nvidia-smi topo -m`, after its legend:
//
//	X    = Self
//	SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
//	NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
//	PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
//	PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
//	PIX  = Connection traversing at most a single PCIe bridge
//	NV#  = Connection traversing a bonded set of # NVLinks
//
// Old drivers wrote SOC for SYS.
var matrixLevels = map[string]LinkLevel{
	"SYS": LinkSystem, "SOC": LinkSystem, "NODE": LinkNUMANode, "PHB": LinkHostBridge,
	"PXB": LinkPCIeSwitch, "PIX": LinkPCIeSwitch, "?": LinkUnknown, "N/A": LinkUnknown,
}

// matrixCell writes a link as the matrix does.
func matrixCell(l Link) string {
	switch l.Level {
	case LinkNVLink:
		if l.NVLinks > 0 {
			return "NV" + strconv.Itoa(l.NVLinks)
		}
		return "NV"
	case LinkPCIeSwitch:
		return "PIX"
	case LinkHostBridge:
		return "PHB"
	case LinkNUMANode:
		return "NODE"
	case LinkSystem:
		return "SYS"
	}
	return "?"
}

// parseMatrixCell reads one off-diagonal cell.
func parseMatrixCell(s string) (Link, bool) {
	if l, ok := matrixLevels[s]; ok {
		return Link{Level: l}, true
	}
	count, ok := strings.CutPrefix(s, "NV")
	if !ok {
		return Link{}, false
	}
	if count == "" {
		return Link{Level: LinkNVLink}, true
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 || n > 1000 {
		return Link{}, false
	}
	return Link{Level: LinkNVLink, NVLinks: n}, true
}

// ansiEscape matches the colour and underline codes nvidia-smi puts around
// the header when writing to a terminal.
var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*[a-zA-Z]")

var gpuLabel = regexp.MustCompile(`^GPU(0|[1-9][0-9]{0,3})$`)

// ParseTopologyMatrix reads the GPU part of `nvidia-smi topo -m`: the header
// of GPU columns and one row per GPU. NIC columns and rows, CPU and NUMA
// affinity columns and the legend are skipped, so a real box's dump can be
// used as it was printed. The matrix must be symmetric with X on the
// diagonal.
func ParseTopologyMatrix(b []byte) (Topology, error) {
	var t Topology
	n := -1 // GPU columns, once the header is read
	seen := map[int]bool{}
	sc := bufio.NewScanner(bytes.NewReader(ansiEscape.ReplaceAll(b, nil)))
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if strings.HasPrefix(fields[0], "Legend") {
			break
		}
		if n < 0 {
			if !gpuLabel.MatchString(fields[0]) {
				continue // text before the header
			}
			n = 0
			for n < len(fields) && fields[n] == "GPU"+strconv.Itoa(n) {
				n++
			}
			if n < len(fields) && gpuLabel.MatchString(fields[n]) {
				return Topology{}, fmt.Errorf("%w: line %d: column %d is %s, not GPU%d", ErrTopology, line, n+1, fields[n], n)
			}
			if n > maxTopologyGPUs {
				return Topology{}, fmt.Errorf("%w: line %d: %d GPU columns, more than %d", ErrTopology, line, n, maxTopologyGPUs)
			}
			t = NewTopology(n)
			continue
		}
		if !gpuLabel.MatchString(fields[0]) {
			continue // a NIC's row
		}
		row, _ := strconv.Atoi(fields[0][len("GPU"):])
		if row >= n || seen[row] {
			return Topology{}, fmt.Errorf("%w: line %d: row %s repeated or outside the %d GPU columns", ErrTopology, line, fields[0], n)
		}
		seen[row] = true
		if len(fields) < n+1 {
			return Topology{}, fmt.Errorf("%w: line %d: row %s has %d cells, not %d", ErrTopology, line, fields[0], len(fields)-1, n)
		}
		for col, cell := range fields[1 : n+1] {
			if col == row {
				if cell != "X" {
					return Topology{}, fmt.Errorf("%w: line %d: GPU%d with itself is %q, not X", ErrTopology, line, row, cell)
				}
				continue
			}
			l, ok := parseMatrixCell(cell)
			if !ok {
				return Topology{}, fmt.Errorf("%w: line %d: GPU%d-GPU%d: %q is not X, NV#, PIX, PXB, PHB, NODE or SYS", ErrTopology, line, row, col, clip(cell))
			}
			t.links[row*n+col] = l
		}
	}
	if err := sc.Err(); err != nil {
		return Topology{}, fmt.Errorf("%w: %w", ErrTopology, err)
	}
	if n <= 0 {
		return Topology{}, fmt.Errorf("%w: no header of GPU columns (GPU0 GPU1 …)", ErrTopology)
	}
	if len(seen) != n {
		return Topology{}, fmt.Errorf("%w: %d GPU columns but %d GPU rows", ErrTopology, n, len(seen))
	}
	for a := range n {
		for b := a + 1; b < n; b++ {
			if t.Link(a, b) != t.Link(b, a) {
				return Topology{}, fmt.Errorf("%w: GPU%d-GPU%d is %s but GPU%d-GPU%d is %s",
					ErrTopology, a, b, matrixCell(t.Link(a, b)), b, a, matrixCell(t.Link(b, a)))
			}
		}
	}
	return t, nil
}
