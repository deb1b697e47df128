package clock

import "time"

// MaxSleep bounds every wait, so that a step of the wall clock (NTP) is
// noticed within a second: deadlines are wall-clock instants.
const MaxSleep = time.Second
