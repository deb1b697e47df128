#!/bin/sh
# pre-edits the split tool cannot make: a storage method on a domain type becomes a function
set -e
sed -i 's/^func (p Partition) Invalid(id uint64) string {/func InvalidPartition(p Partition, id uint64) string {/' storage/diagnosis.go
sed -i 's/\bp\.Invalid(/storage.InvalidPartition(p, /g' storage/bolt/repair.go
sed -i 's/\bp\.Invalid(/InvalidPartition(p, /g' storage/check.go
