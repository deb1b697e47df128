package storage

import (
	"fmt"

	"github.com/chronos-gpu/chronos/core/domain"
)

// Diagnosis is what Diagnose found in a ledger file, in plain words.
type Diagnosis struct {
	Path       string   `json:"path"`
	Exists     bool     `json:"exists"`
	Healthy    bool     `json:"healthy"`
	Problems   []string `json:"problems"`
	Schema     int      `json:"schema"`
	Partitions int      `json:"partitions"`
	Live       int      `json:"live"`
	Events     int      `json:"events"`
	Claims     int      `json:"claims"`
	Backup     string   `json:"backup"`
	// BackupDamaged: the backup is there but cannot be used; Healthy still
	// speaks of the ledger alone.
	BackupDamaged bool `json:"backup_damaged"`
}

const maxProblems = 50

func (d *Diagnosis) Problem(format string, args ...any) {
	switch {
	case len(d.Problems) < maxProblems:
		d.Problems = append(d.Problems, fmt.Sprintf(format, args...))
	case len(d.Problems) == maxProblems:
		d.Problems = append(d.Problems, "… and more")
	}
}

// Counters are the highest booking id and event number a ledger handed out.
type Counters struct{ Parts, Events uint64 }

// Invalid says what is wrong with a partition stored under id, or "".
func InvalidPartition(p domain.Partition, id uint64) string {
	switch {
	case p.ID != id:
		return fmt.Sprintf("stored under id %d but says it is %d", id, p.ID)
	case p.V > SchemaVersion:
		return fmt.Sprintf("record version %d is newer than this chronos", p.V)
	case p.State == "":
		return "has no state: list hides it, yet the live index may make admission count it"
	case p.State != domain.Live && p.State != domain.Released && p.State != domain.Expired:
		return fmt.Sprintf("unknown state %q", p.State)
	case p.SharePPM <= 0 || p.SharePPM > 1_000_000:
		return fmt.Sprintf("share %d ppm is outside (0, 100%%]", p.SharePPM)
	case p.Device < 0:
		return fmt.Sprintf("device %d", p.Device)
	case len(p.Devices) > 0 && (p.Devices[0] != p.Device || len(p.DeviceUUIDs) != len(p.Devices) || !distinct(p.Devices)):
		return fmt.Sprintf("its GPUs %v (device %d, %d UUIDs) do not hold together", p.Devices, p.Device, len(p.DeviceUUIDs))
	case !p.Expires.After(p.Created):
		return "ends before it starts"
	}
	return ""
}

// distinct says whether no GPU is named twice, none negative.
func distinct(devices []int) bool {
	seen := map[int]bool{}
	for _, d := range devices {
		if d < 0 || seen[d] {
			return false
		}
		seen[d] = true
	}
	return true
}
