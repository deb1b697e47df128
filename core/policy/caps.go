package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
)

// GroupCap caps what a group's members hold together (Slurm's GrpTRES and
// GrpTRESMins), where user-gpus and user-hours limit each member alone.
type GroupCap struct {
	Group  string
	GPUs   *float64      // GPU-equivalents the members hold at once; nil: no cap
	Hours  *float64      // GPU-hours the members book in any Window; nil: no cap
	Window time.Duration //
}

func (c GroupCap) Capped() bool { return c.GPUs != nil || c.Hours != nil }

// GroupCapOf is the cap a group's settings set; false when they set none.
func GroupCapOf(group string, settings map[string]string) (GroupCap, bool) {
	c := GroupCap{Group: group}
	for k, v := range settings {
		if kn, _ := knobNamed(k); kn != nil && kn.setCap != nil {
			_ = kn.setCap(&c, v) // checked when it was set
		}
	}
	return c, c.Capped()
}

// CapsGroupHours says whether a group has an hours cap: weighing its
// members' requests then looks back on what every member held, found
// among the users with a usage record.
func CapsGroupHours(pol domain.Policy) bool {
	return slices.ContainsFunc(pol.Overrides, func(o domain.Override) bool {
		c, ok := GroupCapOf("", o.Settings)
		return ok && c.Hours != nil
	})
}

// checkCap checks a group cap's setting for target: only a group has one.
func checkCap(kn *knob, target, v string) error {
	if !strings.HasPrefix(target, "@") {
		return errCapNeedsGroup(kn.key, target)
	}
	if v == "default" {
		return nil
	}
	return kn.setCap(&GroupCap{}, v)
}

func errCapNeedsGroup(key, target string) error {
	msg := key + " caps a group's members together: it needs a group, for=@GROUP (for=@students)"
	if target != "" {
		msg += fmt.Sprintf("; for=%s names a user, whom %s limits alone", target, strings.Replace(key, "group-", "user-", 1))
	}
	return domain.InputErr("%s", msg)
}

// GroupCap is the cap of the user's group named; a blocker names it.
func (l Limits) GroupCap(group string) GroupCap {
	i := slices.IndexFunc(l.Groups, func(c GroupCap) bool { return c.Group == group })
	if i < 0 {
		return GroupCap{Group: group}
	}
	return l.Groups[i]
}
