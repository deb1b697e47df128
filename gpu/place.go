package gpu

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors Place returns, wrapped with the figures.
var (
	// ErrGPUCount means fewer than one GPU was asked for.
	ErrGPUCount = errors.New("a booking needs at least one GPU")
	// ErrNotEnoughGPUs means fewer GPUs have room than were asked for.
	ErrNotEnoughGPUs = errors.New("not enough GPUs with room")
)

// Placement is the GPUs Place chose and why.
type Placement struct {
	GPUs []int `json:"gpus"` // sorted
	// Worst is the worst link between two of the GPUs; absent for one GPU.
	Worst LinkLevel `json:"worst_link,omitempty"`
	// Pairs counts the GPU pairs at each level.
	Pairs  map[LinkLevel]int `json:"pairs,omitempty"`
	Reason string            `json:"reason"` // for people: "GPUs 0-3: all pairs NVLink"
}

// placeScore ranks a set of GPUs: the worst pair first (all NVLink beats any
// set with one PCIe hop), then the number of pairs at each level from the
// best down, then the NVLinks summed over pairs.
type placeScore struct {
	worst   LinkLevel
	counts  [LinkNVLink + 1]int
	nvlinks int
}

// noPairs is the worst link of a set with no pairs yet: above every level.
const noPairs = LinkNVLink + 1

func (s placeScore) better(o placeScore) bool {
	if s.worst != o.worst {
		return s.worst > o.worst
	}
	for _, l := range linkLevels {
		if s.counts[l] != o.counts[l] {
			return s.counts[l] > o.counts[l]
		}
	}
	return s.nvlinks > o.nvlinks
}

// add is s with GPU g joined to the GPUs in set.
func (s placeScore) add(t Topology, set []int, g int) placeScore {
	for _, h := range set {
		l := t.Link(g, h)
		s.worst = min(s.worst, l.Level)
		s.counts[l.Level]++
		s.nvlinks += l.NVLinks
	}
	return s
}

// maxExhaustive bounds the sets Place tries one by one (16 choose 8 is
// 12,870); past it, it grows sets greedily from each candidate.
const maxExhaustive = 1 << 16

// Place chooses n of the candidate GPUs free (those with room, as the caller
// decided) that are best connected in t: the worst link between any two as
// good as it can be, then as many pairs as possible at the best levels, then
// the most NVLinks, then the lowest indices, so the same input always gives
// the same answer. Up to maxExhaustive sets are tried exhaustively; on
// bigger hosts a greedy search from each candidate decides.
func Place(t Topology, free []int, n int) (Placement, error) {
	if n < 1 {
		return Placement{}, fmt.Errorf("%w: %d asked", ErrGPUCount, n)
	}
	cands := slices.Sorted(slices.Values(free))
	for i, g := range cands {
		if g < 0 || i > 0 && cands[i-1] == g {
			return Placement{}, fmt.Errorf("%w: candidate GPUs %v: GPU %d is negative or given twice", ErrGPUList, free, g)
		}
	}
	if n > len(cands) {
		have := "none has"
		if len(cands) > 0 {
			have = fmt.Sprintf("only %d (GPUs %s) have", len(cands), FormatGPUList(cands))
		}
		asked := fmt.Sprintf("%d GPUs", n)
		if n == 1 {
			asked = "1 GPU"
		}
		return Placement{}, fmt.Errorf("%w: %s asked, %s room", ErrNotEnoughGPUs, asked, have)
	}
	set, score := bestSet(t, cands, n)
	p := Placement{GPUs: set, Pairs: map[LinkLevel]int{}}
	if n > 1 {
		p.Worst = score.worst
		for _, l := range linkLevels {
			if score.counts[l] > 0 {
				p.Pairs[l] = score.counts[l]
			}
		}
	}
	p.Reason = reason(set, score)
	// Say when better-connected GPUs exist but lacked room.
	if n > 1 && len(cands) < t.Len() && score.worst < LinkNVLink {
		all := make([]int, t.Len())
		for i := range all {
			all[i] = i
		}
		if _, best := bestSet(t, all, n); best.worst > score.worst {
			p.Reason += fmt.Sprintf(" (no %s had room)", betterSet(n, best.worst))
		}
	}
	return p, nil
}

// bestSet is the best n of cands (sorted, n ≤ len(cands)) and its score.
func bestSet(t Topology, cands []int, n int) ([]int, placeScore) {
	if combinations(len(cands), n) <= maxExhaustive {
		return exhaustive(t, cands, n)
	}
	return greedy(t, cands, n)
}

// combinations is len choose n, stopping once past maxExhaustive.
func combinations(total, n int) int {
	c := 1
	for i := range min(n, total-n) {
		c = c * (total - i) / (i + 1)
		if c > maxExhaustive {
			return c
		}
	}
	return c
}

// exhaustive tries the sets in index order, keeping only a strictly better
// one, so ties go to the lowest indices. A partial set is dropped once even
// its best completion (every pair still to come at the best level any two
// candidates have, with the most NVLinks) could not beat the best found:
// on a box of equal links the first set found ends the search.
func exhaustive(t Topology, cands []int, n int) ([]int, placeScore) {
	top := Link{}
	for i, a := range cands {
		for _, b := range cands[i+1:] {
			l := t.Link(a, b)
			top.Level = max(top.Level, l.Level)
			top.NVLinks = max(top.NVLinks, l.NVLinks)
		}
	}
	pairs := func(k int) int { return k * (k - 1) / 2 }
	var best []int
	var bestScore placeScore
	cur := make([]int, 0, n)
	var walk func(from int, s placeScore)
	walk = func(from int, s placeScore) {
		if best != nil {
			bound := s
			if rest := pairs(n) - pairs(len(cur)); rest > 0 {
				bound.worst = min(bound.worst, top.Level)
				bound.counts[top.Level] += rest
				bound.nvlinks += rest * top.NVLinks
			}
			if !bound.better(bestScore) {
				return
			}
		}
		if len(cur) == n {
			best, bestScore = slices.Clone(cur), s
			return
		}
		for i := from; i <= len(cands)-(n-len(cur)); i++ {
			next := s.add(t, cur, cands[i])
			cur = append(cur, cands[i])
			walk(i+1, next)
			cur = cur[:len(cur)-1]
		}
	}
	walk(0, placeScore{worst: noPairs})
	return best, bestScore
}

// greedy grows a set from each candidate, adding the GPU whose worst link
// to the set is best (then the most links at the best levels, then the
// lowest index), and keeps the best set grown.
func greedy(t Topology, cands []int, n int) ([]int, placeScore) {
	var best []int
	var bestScore placeScore
	// toSet[i] is candidate i's links to the set grown so far, kept up to
	// date as GPUs join rather than recounted for each pick.
	toSet := make([]placeScore, len(cands))
	in := make([]bool, len(cands))
	for seed := range cands {
		set, s := make([]int, 0, n), placeScore{worst: noPairs}
		clear(in)
		for i := range toSet {
			toSet[i] = placeScore{worst: noPairs}
		}
		join := func(i int) {
			s = s.add(t, set, cands[i])
			set = append(set, cands[i])
			in[i] = true
			for j, g := range cands {
				if !in[j] {
					toSet[j] = toSet[j].add(t, []int{cands[i]}, g)
				}
			}
		}
		join(seed)
		for len(set) < n {
			pick := -1
			for j := range cands {
				if !in[j] && (pick < 0 || toSet[j].better(toSet[pick])) {
					pick = j
				}
			}
			join(pick)
		}
		slices.Sort(set)
		if best == nil || s.better(bestScore) || !bestScore.better(s) && slices.Compare(set, best) < 0 {
			best, bestScore = set, s
		}
	}
	return best, bestScore
}

// reason says in words how the chosen GPUs are joined.
func reason(set []int, s placeScore) string {
	if len(set) == 1 {
		return fmt.Sprintf("GPU %d: a single GPU", set[0])
	}
	head := "GPUs " + FormatGPUList(set) + ": "
	pairs := len(set) * (len(set) - 1) / 2
	switch {
	case pairs == 1 && s.worst == LinkNVLink:
		return head + Link{Level: LinkNVLink, NVLinks: s.nvlinks}.String()
	case pairs == 1:
		return head + s.worst.phrase()
	case s.counts[s.worst] == pairs:
		return head + "all pairs " + s.worst.phrase()
	}
	var parts []string
	for _, l := range linkLevels {
		if c := s.counts[l]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, l))
		}
	}
	return fmt.Sprintf("%sworst pair %s (of %d pairs: %s)", head, s.worst.phrase(), pairs, strings.Join(parts, ", "))
}

// betterSet names n GPUs joined at least at level l, for a reason's
// "(no … had room)".
func betterSet(n int, l LinkLevel) string {
	var joined string
	switch l {
	case LinkNVLink:
		joined = "joined by NVLink"
	case LinkSystem:
		joined = "with known links"
	default:
		joined = "on one " + l.String()
	}
	if n == 2 {
		return "pair " + joined
	}
	return fmt.Sprintf("%d GPUs %s", n, joined)
}
