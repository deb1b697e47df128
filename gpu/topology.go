package gpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// LinkLevel is how directly two GPUs of one host reach each other, the
// levels of `nvidia-smi topo -m`. A higher level is a better link: the zero
// value, LinkUnknown, is the worst, so a pair nothing could be learnt about
// never outranks a pair known to be slow.
type LinkLevel int

// The link levels, worst first.
const (
	LinkUnknown    LinkLevel = iota // not known: the backend cannot tell
	LinkSystem                      // across NUMA nodes: the CPUs' interconnect (SYS)
	LinkNUMANode                    // one NUMA node, different host bridges (NODE)
	LinkHostBridge                  // one PCIe host bridge, no switch between (PHB)
	LinkPCIeSwitch                  // one PCIe switch, or a tree of them, below the host bridge (PIX, PXB)
	LinkNVLink                      // NVLink, direct or through NVSwitches (NV#)
)

// linkLevels are every level, best first, as placement weighs them.
var linkLevels = []LinkLevel{LinkNVLink, LinkPCIeSwitch, LinkHostBridge, LinkNUMANode, LinkSystem, LinkUnknown}

var linkNames = map[LinkLevel]string{
	LinkUnknown:    "unknown",
	LinkSystem:     "across NUMA nodes",
	LinkNUMANode:   "NUMA node",
	LinkHostBridge: "host bridge",
	LinkPCIeSwitch: "PCIe switch",
	LinkNVLink:     "NVLink",
}

// String names the level for people: "NVLink", "PCIe switch", "host
// bridge", "NUMA node", "across NUMA nodes" or "unknown".
func (l LinkLevel) String() string {
	if s, ok := linkNames[l]; ok {
		return s
	}
	return fmt.Sprintf("LinkLevel(%d)", int(l))
}

// phrase says what a pair at this level shares, for a placement's reason.
func (l LinkLevel) phrase() string {
	switch l {
	case LinkPCIeSwitch, LinkHostBridge, LinkNUMANode:
		return "same " + l.String()
	case LinkUnknown:
		return "links unknown"
	}
	return l.String()
}

// ErrLinkLevel means a link level's name was not one LinkLevel.String gives.
var ErrLinkLevel = errors.New("unknown GPU link level")

// MarshalText writes the level as String does, so JSON carries words.
func (l LinkLevel) MarshalText() ([]byte, error) {
	if _, ok := linkNames[l]; !ok {
		return nil, fmt.Errorf("%w: %d", ErrLinkLevel, int(l))
	}
	return []byte(l.String()), nil
}

// UnmarshalText reads what MarshalText writes.
func (l *LinkLevel) UnmarshalText(b []byte) error {
	for level, name := range linkNames {
		if name == string(b) {
			*l = level
			return nil
		}
	}
	return fmt.Errorf("%w %q", ErrLinkLevel, b)
}

// Link is how two GPUs are connected.
type Link struct {
	Level LinkLevel `json:"level"`
	// NVLinks is how many NVLinks join the pair (through NVSwitches: the
	// fewer of the two GPUs' links); 0 when not NVLink or not known.
	NVLinks int `json:"nvlinks,omitempty"`
}

// String is the level, with the NVLink count when known: "NVLink ×4".
func (l Link) String() string {
	if l.Level == LinkNVLink && l.NVLinks > 0 {
		return fmt.Sprintf("NVLink ×%d", l.NVLinks)
	}
	return l.Level.String()
}

// Topology is the link between every two of a host's GPUs, by the index the
// Backend lists them with. The zero value knows no GPU; a pair it holds no
// link for is LinkUnknown.
type Topology struct {
	n     int
	links []Link // n×n, row-major, kept symmetric; the diagonal is unused
}

// NewTopology is a topology of n GPUs whose links are all unknown.
func NewTopology(n int) Topology {
	n = max(n, 0)
	return Topology{n: n, links: make([]Link, n*n)}
}

// Len is the number of GPUs.
func (t Topology) Len() int { return t.n }

// Link is how GPUs a and b are connected; LinkUnknown for a GPU outside the
// topology and for a GPU with itself.
func (t Topology) Link(a, b int) Link {
	if a == b || a < 0 || b < 0 || a >= t.n || b >= t.n {
		return Link{}
	}
	return t.links[a*t.n+b]
}

// SetLink records the link between a and b (both ways). Indices outside the
// topology, or a == b, are a programming error and panic.
func (t *Topology) SetLink(a, b int, l Link) {
	if a == b || a < 0 || b < 0 || a >= t.n || b >= t.n {
		panic(fmt.Sprintf("gpu: SetLink(%d, %d) on a topology of %d GPUs", a, b, t.n))
	}
	t.links[a*t.n+b], t.links[b*t.n+a] = l, l
}

// Known says whether any pair's link is known.
func (t Topology) Known() bool {
	return slices.ContainsFunc(t.links, func(l Link) bool { return l.Level != LinkUnknown })
}

// Equal says whether both hold the same GPUs and links.
func (t Topology) Equal(u Topology) bool {
	return t.n == u.n && slices.Equal(t.links, u.links)
}

// clone is a copy the caller may change without changing t: backends hand
// out clones of the topology they read once.
func (t Topology) clone() Topology {
	return Topology{n: t.n, links: slices.Clone(t.links)}
}

// Topologist is a Backend that knows how its GPUs are connected.
type Topologist interface {
	Topology() Topology
}

// TopologyOf is b's topology: what it read when it started, or, for a
// backend that cannot tell, its GPUs with every link unknown.
func TopologyOf(b Backend) Topology {
	if t, ok := b.(Topologist); ok {
		return t.Topology()
	}
	devs, err := b.Devices()
	if err != nil {
		return Topology{}
	}
	return NewTopology(len(devs))
}

// topologyPair is one known link in the JSON form.
type topologyPair struct {
	A int `json:"a"`
	B int `json:"b"`
	Link
}

type topologyJSON struct {
	GPUs  int            `json:"gpus"`
	Links []topologyPair `json:"links"`
}

// MarshalJSON writes the GPU count and each known pair once (a < b), so an
// inventory can keep the topology beside the devices.
func (t Topology) MarshalJSON() ([]byte, error) {
	out := topologyJSON{GPUs: t.n, Links: []topologyPair{}}
	for a := range t.n {
		for b := a + 1; b < t.n; b++ {
			if l := t.Link(a, b); l != (Link{}) {
				out.Links = append(out.Links, topologyPair{A: a, B: b, Link: l})
			}
		}
	}
	return json.Marshal(out)
}

// maxTopologyGPUs bounds what UnmarshalJSON accepts, so a damaged record
// cannot make it allocate without end.
const maxTopologyGPUs = MaxGPUIndex + 1

// ErrTopology means a written topology (JSON or an `nvidia-smi topo -m`
// matrix) does not hold together.
var ErrTopology = errors.New("invalid GPU topology")

// UnmarshalJSON reads what MarshalJSON writes, refusing pairs outside the
// GPU count or given twice.
func (t *Topology) UnmarshalJSON(b []byte) error {
	var in topologyJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("%w: %w", ErrTopology, err)
	}
	if in.GPUs < 0 || in.GPUs > maxTopologyGPUs {
		return fmt.Errorf("%w: %d GPUs", ErrTopology, in.GPUs)
	}
	out := NewTopology(in.GPUs)
	seen := map[[2]int]bool{}
	for _, p := range in.Links {
		a, b := min(p.A, p.B), max(p.A, p.B)
		if a < 0 || b >= in.GPUs || a == b || p.NVLinks < 0 {
			return fmt.Errorf("%w: link %d-%d (%s) on %d GPUs", ErrTopology, p.A, p.B, p.Link, in.GPUs)
		}
		if seen[[2]int{a, b}] {
			return fmt.Errorf("%w: link %d-%d given twice", ErrTopology, a, b)
		}
		seen[[2]int{a, b}] = true
		out.SetLink(a, b, p.Link)
	}
	*t = out
	return nil
}

// String writes the topology as `nvidia-smi topo -m` draws it (NV#, PIX,
// PHB, NODE, SYS; "?" for unknown), which ParseTopologyMatrix reads back.
func (t Topology) String() string {
	var b strings.Builder
	for i := range t.n {
		fmt.Fprintf(&b, "\tGPU%d", i)
	}
	b.WriteByte('\n')
	for a := range t.n {
		fmt.Fprintf(&b, "GPU%d", a)
		for c := range t.n {
			b.WriteByte('\t')
			if a == c {
				b.WriteString(" X ")
				continue
			}
			b.WriteString(matrixCell(t.Link(a, c)))
		}
		b.WriteByte('\n')
	}
	return b.String()
}
