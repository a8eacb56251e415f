package postgres

// RememberStack records a stack key as stored with a content check, as a
// committed upload would (tests: a collision the memory must catch).
func (db *DB) RememberStack(tenant, key int64, check uint64) {
	db.known.remember(tenant, nil, map[int64]uint64{key: check})
}
