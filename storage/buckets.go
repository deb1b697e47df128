package storage

import "slices"

// SchemaVersion is the layout this binary writes. An older binary refuses a
// file with a newer version rather than guess at it.
const SchemaVersion = 1

// The ledger's layout, the same in every engine: named buckets of records
// and the meta bucket's keys.
var (
	BucketMeta       = []byte("meta")
	BucketPartitions = []byte("partitions")
	BucketEvents     = []byte("events")
	BucketClaims     = []byte("claims")
	// BucketLive indexes the partitions stored as live, so admission reads
	// a handful of records however long the history grows.
	BucketLive = []byte("live")
	// BucketRequests holds the waiting line's requests, and BucketWaiting
	// indexes those still waiting, as BucketLive does for bookings.
	BucketRequests = []byte("requests")
	BucketWaiting  = []byte("waiting")
	// BucketUsage holds each user's decayed usage, by uid (fair share);
	// BucketHeld what their ended bookings held, by uid and end (hours
	// quotas and usage reports).
	BucketUsage = []byte("usage")
	BucketHeld  = []byte("held")

	// RequiredBuckets are in every ledger written once; knownBuckets is
	// the layout: every bucket a ledger may hold. Every write creates them
	// all; the accounting and the waiting line's came later, and a ledger
	// last written before them lacks them until its next write.
	requiredBuckets = [][]byte{BucketMeta, BucketPartitions, BucketEvents, BucketClaims, BucketLive}
	knownBuckets    = append(slices.Clone(requiredBuckets), BucketBookingUsage, BucketSamples, BucketUnbooked,
		BucketRequests, BucketWaiting, BucketUsage, BucketHeld)

	KeySchema    = []byte("schema")
	KeyInventory = []byte("inventory")
	KeyPolicy    = []byte("policy")
	// keyReadingPrefix and a GPU's index name its latest reading.
	keyReadingPrefix = []byte("reading/")
)

// RequiredBuckets are the buckets every ledger written once holds: a file
// without them is not a ledger (repair and doctor say so).
func RequiredBuckets() [][]byte { return slices.Clone(requiredBuckets) }
