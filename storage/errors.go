package storage

import "errors"

// The errors every engine returns, so that callers tell them apart
// whichever engine holds the ledger.
var (
	// ErrBusy means another process held the ledger's lock past the timeout.
	ErrBusy = errors.New("the ledger is busy")
	// ErrDamaged means the file at the ledger path is not a readable ledger.
	ErrDamaged = errors.New("the ledger file is damaged or is not a chronos ledger")
	// ErrNewerSchema means a newer chronos wrote the file.
	ErrNewerSchema = errors.New("the ledger was written by a newer chronos")
	// ErrUnavailable means a ledger on a server (etcd) did not answer in
	// time.
	ErrUnavailable = errors.New("the ledger cannot be reached")
)
