package storage

// KeyGuard marks a guarded ledger (init --shared --guarded): members read
// it directly but change it only through root's keeper.
var KeyGuard = []byte("guard")

// Guard is what a guarded ledger records of its keeping: the group whose
// members may ask the keeper to write.
type Guard struct {
	Group string `json:"group"`
	GID   int    `json:"gid"`
}

// Guard reads the ledger's guard mark; ok is false for an open ledger.
func (tx *Tx) Guard() (g Guard, ok bool, err error) {
	ok, err = tx.getMeta(KeyGuard, &g)
	return g, ok, err
}

// PutGuard marks the ledger guarded for g's group.
func (tx *Tx) PutGuard(g Guard) error { return tx.putMeta(KeyGuard, g) }

// DropGuard makes the ledger open again.
func (tx *Tx) DropGuard() error {
	raw, err := tx.writable("drop guard")
	if err != nil {
		return err
	}
	return raw.Delete(BucketMeta, KeyGuard)
}
