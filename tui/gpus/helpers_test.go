package gpus

import "time"

// t0 is when every test happens.
var t0 = time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)
