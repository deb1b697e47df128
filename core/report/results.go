package report

import (
	"time"
)

// UserUsage is one user's use of the GPUs and what their quotas leave, as
// `chronos usage` shows it and `usage --json` prints it. GPU-hours are
// share-weighted: a 50% booking held an hour is half a GPU-hour.
type UserUsage struct {
	UID  int    `json:"uid"`
	User string `json:"user"`
	// GPU-hours held in the last 7 and 30 days (bookings released early
	// count the time they were held).
	Hours7d  float64 `json:"gpu_hours_7d"`
	Hours30d float64 `json:"gpu_hours_30d"`
	// What `chronos report` counts for the user over the last 7 and 30
	// days: GPU-hours used as monitors measured them, share-weighted
	// GPU-hours held idle, and GPU-hours used with no booking.
	Used7d      float64 `json:"used_gpu_hours_7d"`
	Used30d     float64 `json:"used_gpu_hours_30d"`
	Idle7d      float64 `json:"idle_gpu_hours_7d"`
	Idle30d     float64 `json:"idle_gpu_hours_30d"`
	Unbooked7d  float64 `json:"unbooked_gpu_hours_7d"`
	Unbooked30d float64 `json:"unbooked_gpu_hours_30d"`
	// GPUs is the GPU-equivalents held now; Ahead, those booked to start
	// later.
	GPUs  float64 `json:"gpus_now"`
	Ahead float64 `json:"gpus_booked_ahead"`
	// What the quotas leave now; nil where there is no limit (or the user
	// is exempt).
	GPUsLeft  *float64 `json:"user_gpus_left"`
	HoursLeft *float64 `json:"user_hours_left"`
	// Usage is the decayed usage that orders the line, in GPU-hours, and
	// Factor the fair-share factor from it (1: no use; 0.5: at one's share).
	Usage   float64 `json:"usage_gpu_hours"`
	Factor  float64 `json:"fair_share"`
	Waiting int     `json:"waiting"`
}

// Report is `chronos report --json`: GPU use in [from, to) by user, group
// or GPU (see Read). GPU-hours are share-weighted where they are
// booked (50% of a GPU for 2h is 1) and measured where they are used (a
// whole GPU busy for an hour is 1).
type Report struct {
	From  time.Time `json:"from"` // the zero time: since the ledger began
	To    time.Time `json:"to"`
	By    By        `json:"by"`
	Rows  []Row     `json:"rows"`
	Total Row       `json:"total"`
}

// Row is one user's, group's or GPU's figures.
type Row struct {
	Key         string  `json:"key"` // user name, group name or GPU index
	BookedHours float64 `json:"booked_gpu_hours"`
	UsedHours   float64 `json:"used_gpu_hours"`
	IdleHours   float64 `json:"idle_gpu_hours"`
	// UnbookedHours is GPU time used with no booking; not recorded per GPU
	// (null with --by gpu).
	UnbookedHours *float64 `json:"unbooked_gpu_hours"`
	Bookings      int      `json:"bookings"`
	Reclaimed     int      `json:"reclaimed"`
	Expired       int      `json:"expired"`
	// Forced: of the expired, those whose processes still ran at the
	// deadline and were signalled.
	Forced int `json:"forced"`
}
