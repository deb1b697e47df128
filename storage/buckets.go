package storage

import "slices"

// SchemaVersion is the layout this binary writes. An older binary refuses a
// file with a newer version rather than guess at it.
const SchemaVersion = 1

// The ledger's layout, the same in every engine: named buckets of records
// and the meta bucket's keys.
var (
	bucketMeta       = []byte("meta")
	bucketPartitions = []byte("partitions")
	bucketEvents     = []byte("events")
	bucketClaims     = []byte("claims")
	// bucketLive indexes the partitions stored as live, so admission reads
	// a handful of records however long the history grows.
	bucketLive = []byte("live")
	// bucketRequests holds the waiting line's requests, and bucketWaiting
	// indexes those still waiting, as bucketLive does for bookings.
	bucketRequests = []byte("requests")
	bucketWaiting  = []byte("waiting")
	// bucketUsage holds each user's decayed usage, by uid (fair share);
	// bucketHeld what their ended bookings held, by uid and end (hours
	// quotas and usage reports).
	bucketUsage = []byte("usage")
	bucketHeld  = []byte("held")

	// requiredBuckets are in every ledger written once; knownBuckets is
	// the layout: every bucket a ledger may hold. Every write creates them
	// all; the accounting and the waiting line's came later, and a ledger
	// last written before them lacks them until its next write.
	requiredBuckets = [][]byte{bucketMeta, bucketPartitions, bucketEvents, bucketClaims, bucketLive}
	knownBuckets    = append(slices.Clone(requiredBuckets), bucketBookingUsage, bucketSamples, bucketUnbooked,
		bucketRequests, bucketWaiting, bucketUsage, bucketHeld)

	keySchema    = []byte("schema")
	keyInventory = []byte("inventory")
	keyPolicy    = []byte("policy")
	// keyReadingPrefix and a GPU's index name its latest reading.
	keyReadingPrefix = []byte("reading/")
)
