package core

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage"
)

// claimSignal takes the claim a monitor would take before signalling the
// process pid (started at start), and in the same transaction flips the
// booking to expired when its deadline has passed. It reports whether this
// caller got the claim. The booking must be the caller's (or the caller
// root's).
func claimSignal(c *Client, id uint64, act domain.ClaimAct, pid int, start uint64, detail string) (bool, error) {
	key := domain.ClaimKey(act, pid, start)
	won, more := false, false
	err := c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		won, more = false, false
		claims, err := tx.Claims()
		if err != nil {
			return err
		}
		if _, taken := claims[key]; taken {
			return nil
		}
		cur, err := tx.Partition(id)
		if err != nil {
			return err
		}
		if !c.me.MayChange(cur.UID) {
			return fmt.Errorf("%w: %d belongs to %s; only they or root may signal its command", domain.ErrNotOwner, id, cur.User)
		}
		now := c.now()
		if err := tx.PutClaim(key, domain.Claim{By: fmt.Sprintf("chronos run %d", os.Getpid()), At: now}); err != nil {
			return err
		}
		if cur.State == domain.Live && !now.Before(cur.Expires) {
			if err := ledger.EndBooking(tx, &cur, domain.Expired, cur.Expires, ledger.PolicyOnce(tx)); err != nil {
				return err
			}
			late := now.Sub(cur.Expires).Round(time.Microsecond)
			if err := c.RecordEvent(tx, domain.EventExpired, cur, fmt.Sprintf("GPU %s, %s; ended by chronos run; %s after the deadline", human.FormatGPUs("", cur.GPUs()), human.FormatPercent(cur.SharePPM), late)); err != nil {
				return err
			}
			more = true // the room it held goes to the line at once
		}
		won = true
		err = tx.AddEvent(domain.Event{Time: now, Kind: domain.EventSignalled, Partition: cur.ID, UID: c.me.UID, User: c.me.User,
			Process: &domain.EventProcess{PID: pid, UID: c.me.UID, User: c.me.User}, Detail: detail})
		if err != nil || !more {
			return err
		}
		more, err = c.PlaceLine(tx)
		return err
	})
	if err == nil {
		c.PlaceRest(more)
	}
	return won, err
}

// RunEnv is the command's environment: the caller's, unchanged, except for
// the variables that tie it to the partition: the GPU its vendor's runtime
// may see, the booking (under both names), the chronos run that wraps it
// (the caller), the deadline and, under MPS, the limits.
func RunEnv(base []string, p domain.Partition, mps procfs.MPS) []string {
	id := strconv.FormatUint(p.ID, 10)
	ours := append(gpu.VisibleEnvOf(p.UUIDs(), p.GPUs()),
		procfs.BookingEnv+"="+id,
		procfs.PartitionEnv+"="+id,
		procfs.RunEnv+"="+strconv.Itoa(os.Getpid()), // the caller, the chronos run that wraps the command
		"CHRONOS_EXPIRES_AT="+p.Expires.UTC().Format(time.RFC3339Nano),
		"CHRONOS_DEADLINE_UNIX="+strconv.FormatFloat(float64(p.Expires.UnixNano())/1e9, 'f', 6, 64))
	if mps.Running {
		// The command counts the devices it sees from 0: the limit names
		// each.
		limits := make([]string, len(p.GPUs()))
		for i := range limits {
			limits[i] = fmt.Sprintf("%d=%dM", i, p.Bytes>>20)
		}
		ours = append(ours, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="+strings.Join(limits, ","))
		if p.ComputePct > 0 {
			ours = append(ours, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="+strconv.Itoa(p.ComputePct))
		}
	}
	set := make(map[string]bool, len(ours))
	for _, kv := range ours {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	out := make([]string, 0, len(base)+len(ours))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !set[k] {
			out = append(out, kv)
		}
	}
	return append(out, ours...)
}

// ComputeCapNote says when booking p's compute cap is not applied: only an
// NVIDIA MPS daemon applies it, through RunEnv, to commands started while it
// runs; AMD and Intel GPUs have none. It is empty when there is no cap or
// MPS applies it.
func (c *Client) ComputeCapNote(p domain.Partition, mps procfs.MPS) string {
	if p.ComputePct == 0 {
		return ""
	}
	var inv domain.Inventory
	var ok bool
	_ = c.ledger.View(c.ctx, func(tx *storage.Tx) (err error) {
		inv, ok, err = tx.HostInventory(p.Host)
		return err
	})
	switch {
	case capNotApplied(inv, ok, p):
		return fmt.Sprintf("the %d%% compute cap is only recorded, not applied: AMD and Intel GPUs have no MPS here", p.ComputePct)
	case mps.Running:
		return ""
	}
	return fmt.Sprintf("the %d%% compute cap is recorded but not applied: no MPS daemon runs (%s). "+
		"`chronos run` applies it to commands it starts once one does (as root: nvidia-cuda-mps-control -d -M)", p.ComputePct, mps.PipeDir)
}

// capNotApplied says whether p's compute cap can never be applied on its
// GPU, read from its host's inventory (inv, when ok): a DRM GPU, AMD or
// Intel, has no MPS.
func capNotApplied(inv domain.Inventory, ok bool, p domain.Partition) bool {
	return p.ComputePct > 0 && ok && inv.Backend == string(gpu.KindDRM)
}
