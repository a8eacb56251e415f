package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// known remembers the dictionary entries a tenant already has stored
// (committed), each with a check: a second hash of its content, independent
// of the key. An upload writes, and checks for key collisions, only the
// entries it does not find here; one it finds under the same key with a
// different check is a collision, refused as ever. It is an optimisation
// only: bounded (emptied when full), per replica, and emptied when a
// tenant is deleted. A tenant's entries belong to a generation of its
// dictionary (dictionaries.generation, raised by each reclaim): an upload
// reads the generation under the tenant's dictionary lock, and entries of
// another generation are dropped before any is used (sync), so no replica
// trusts an entry a reclaim may have deleted.
type known struct {
	mu      sync.Mutex
	entries map[knownKey]knownEntry
	gens    map[int64]int64 // tenant → the generation its entries belong to
}

// knownEntry is what is remembered of an entry: its check and, for a
// stack, its number (stacks.seq).
type knownEntry struct {
	check uint64
	seq   int64
}

type knownKey struct {
	tenant int64
	key    int64
	stack  bool // a stack's key, not a frame's
}

// maxKnown bounds the remembered entries (about 60 bytes each).
const maxKnown = 2_000_000

func (k *known) lookup(tenant, key int64, stack bool) (e knownEntry, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok = k.entries[knownKey{tenant, key, stack}]
	return e, ok
}

// sync makes gen the tenant's generation, dropping its entries of another.
func (k *known) sync(tenant, gen int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.syncLocked(tenant, gen)
}

func (k *known) syncLocked(tenant, gen int64) {
	if k.gens == nil {
		k.gens = make(map[int64]int64)
	}
	if g, ok := k.gens[tenant]; ok && g != gen {
		for e := range k.entries {
			if e.tenant == tenant {
				delete(k.entries, e)
			}
		}
	}
	k.gens[tenant] = gen
}

// remember records committed entries of generation gen. Entries of an
// older generation than one already seen are not kept: a reclaim may have
// deleted them since.
func (k *known) remember(tenant, gen int64, frames map[int64]uint64, stacks map[int64]knownEntry) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if g, ok := k.gens[tenant]; ok && gen < g {
		return
	}
	k.syncLocked(tenant, gen)
	if k.entries == nil || len(k.entries)+len(frames)+len(stacks) > maxKnown {
		k.entries = make(map[knownKey]knownEntry)
	}
	for key, c := range frames {
		k.entries[knownKey{tenant, key, false}] = knownEntry{check: c}
	}
	for key, e := range stacks {
		k.entries[knownKey{tenant, key, true}] = e
	}
}

// generation is the tenant's generation as last synced (0: none yet).
func (k *known) generation(tenant int64) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.gens[tenant]
}

// forget empties the memory (a tenant's dictionary was deleted).
func (k *known) forget() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.entries = nil
	k.gens = nil
}

// frameCheck and stackCheck hash content independently of the dictionary
// keys of index.Keyer (FNV-1a, not SHA-256).
func frameCheck(f fleetscope.Frame) uint64 {
	return fnv1a(fnv1aByte(fnvOffset, byte(f.Kind)), f.Name)
}

func stackCheck(frames []int64, idle bool) uint64 {
	h := uint64(fnvOffset)
	for _, f := range frames {
		for i := range 8 {
			h = fnv1aByte(h, byte(uint64(f)>>(8*i)))
		}
	}
	if idle {
		h = fnv1aByte(h, 1)
	}
	return h
}

// FNV-1a, 64 bits (hash/fnv's New64a, without its allocation and
// interface calls per part).
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnv1aByte(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime }

func fnv1a(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = fnv1aByte(h, s[i])
	}
	return h
}

// dictWrite is what writeDictionary did: the tenant key and the number of
// each of the profile's stacks, in order; the entries it wrote or looked
// up, to remember once committed, of generation gen; and the bytes of the
// rows it added (see frameBytes).
type dictWrite struct {
	stackIDs, stackSeqs []int64
	frames              map[int64]uint64
	stacks              map[int64]knownEntry
	gen                 int64
	bytes               int64
}

// A dictionary row's bytes, as usage counts them: a fixed measure of its
// content (tuple header, columns, line pointer and primary-key index
// entry), the same when it is added and when it is reclaimed (migration
// 00012 counted the rows stored before with the same expressions).
const (
	frameBytes = `(octet_length(name) + 80)`
	stackBytes = `(8 * cardinality(frames) + 104)`
)

// dictLock is the advisory lock of a tenant's dictionary: uploads hold it
// shared from before they look for stored entries until they commit, a
// reclaim holds it exclusive while it deletes ("fsdc" in ASCII, then the
// tenant's low 32 bits: tenants that share them only wait for each other).
func dictLock(tenant int64) int64 { return 0x66736463<<32 | tenant&0xffffffff }

// writeDictionary adds the profile's frames and stacks to the tenant
// dictionary (bulk: COPY into temporary tables, then INSERT ... ON
// CONFLICT DO NOTHING, since COPY cannot go through row-level security).
// Entries the tenant is known to have are neither written nor checked
// again. It first takes the tenant's dictionary lock, shared, then reads
// the dictionary's generation (a statement of its own, so its snapshot
// follows the lock: a reclaim that committed before is seen), so no reclaim
// deletes anything from then until the upload commits; while a reclaim is
// under way, the keys the profile uses are pinned for it (dictionary_pins).
func (db *DB) writeDictionary(ctx context.Context, tx pgx.Tx, tenant int64, profile uuid.UUID, dict *fleetscope.Dict) (dictWrite, error) {
	var w dictWrite
	var reclaiming bool
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock_shared($1)`, dictLock(tenant))
	b.Queue(`SELECT generation, reclaiming FROM dictionaries WHERE tenant_id = $1`, tenant).QueryRow(func(r pgx.Row) error {
		if err := r.Scan(&w.gen, &reclaiming); !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return nil
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return w, err
	}
	db.known.sync(tenant, w.gen)
	var keys index.Keyer
	frameIDs := make([]int64, dict.NumFrames())
	w.frames = map[int64]uint64{}
	var frameRows [][]any
	for i := range frameIDs {
		f := dict.FrameAt(fleetscope.FrameID(i))
		frameIDs[i] = keys.Frame(f)
		check := frameCheck(f)
		if e, ok := db.known.lookup(tenant, frameIDs[i], false); ok {
			if e.check != check {
				return w, collision(1)
			}
			continue
		}
		w.frames[frameIDs[i]] = check
		frameRows = append(frameRows, []any{frameIDs[i], f.Name, int16(f.Kind)})
	}
	w.stackIDs, w.stackSeqs = make([]int64, dict.NumStacks()), make([]int64, dict.NumStacks())
	w.stacks = map[int64]knownEntry{}
	var unknown []newStack
	ids := make([]int64, 0, 64)
	for i := range w.stackIDs {
		ids = ids[:0]
		for _, f := range dict.StackFrames(fleetscope.StackID(i)) {
			ids = append(ids, frameIDs[f])
		}
		w.stackIDs[i] = keys.Stack(ids)
		idle := dict.Idle(fleetscope.StackID(i))
		check := stackCheck(ids, idle)
		if e, ok := db.known.lookup(tenant, w.stackIDs[i], true); ok {
			if e.check != check {
				return w, collision(1)
			}
			w.stackSeqs[i] = e.seq
			continue
		}
		unknown = append(unknown, newStack{i, slices.Clone(ids), idle, check})
	}
	if reclaiming {
		if _, err := tx.Exec(ctx, `INSERT INTO dictionary_pins (tenant_id, profile_id, stacks, frames) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
			tenant, profile, w.stackIDs, frameIDs); err != nil {
			return w, err
		}
	}
	if len(frameRows) == 0 && len(unknown) == 0 {
		return w, nil
	}
	if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE new_frames (id bigint, name text, kind smallint) ON COMMIT DROP;
		CREATE TEMPORARY TABLE new_stacks (id bigint, frames bigint[], idle boolean) ON COMMIT DROP`); err != nil {
		return w, err
	}
	stackRows := make([][]any, len(unknown))
	for j, st := range unknown {
		stackRows[j] = []any{w.stackIDs[st.i], st.frames, st.idle}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"new_frames"}, []string{"id", "name", "kind"}, pgx.CopyFromRows(frameRows)); err != nil {
		return w, err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"new_stacks"}, []string{"id", "frames", "idle"}, pgx.CopyFromRows(stackRows)); err != nil {
		return w, err
	}
	// Stacks this replica does not know: those stored before keep their
	// numbers; the others get new ones (stack_seq) before they are
	// inserted, so that no number is handed out for a stack the tenant
	// has. Their frames are compared in the database, never read back.
	fresh, err := db.storedStacks(ctx, tx, tenant, &w, unknown)
	if err != nil {
		return w, err
	}
	var freshIDs, seqs []int64
	if len(fresh) > 0 {
		rows, err := tx.Query(ctx, `SELECT nextval('stack_seq') FROM generate_series(1, $1)`, len(fresh))
		if err != nil {
			return w, err
		}
		if seqs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return w, err
		}
		for _, st := range fresh {
			freshIDs = append(freshIDs, w.stackIDs[st.i])
		}
	}
	// The rows added are counted as RETURNING gives them: a row another
	// upload added first is its, not ours.
	var collisions int
	err = tx.QueryRow(ctx, `
		WITH f AS (INSERT INTO frames (tenant_id, id, name, kind) SELECT DISTINCT $1::bigint, id, name, kind FROM new_frames ON CONFLICT DO NOTHING RETURNING `+frameBytes+` AS bytes),
		     s AS (INSERT INTO stacks (tenant_id, id, frames, idle, seq)
		           SELECT DISTINCT ON (n.id) $1::bigint, n.id, n.frames, n.idle, u.seq FROM new_stacks n JOIN unnest($2::bigint[], $3::bigint[]) AS u(id, seq) ON u.id = n.id
		           ON CONFLICT DO NOTHING RETURNING `+stackBytes+` AS bytes)
		SELECT (SELECT count(*) FROM new_frames n JOIN frames f ON f.tenant_id = $1 AND f.id = n.id WHERE f.name <> n.name OR f.kind <> n.kind),
		       (SELECT coalesce(sum(bytes), 0) FROM f)::bigint + (SELECT coalesce(sum(bytes), 0) FROM s)::bigint`,
		tenant, freshIDs, seqs).Scan(&collisions, &w.bytes)
	if err != nil {
		return w, err
	}
	if collisions > 0 {
		return w, collision(collisions)
	}
	if len(fresh) == 0 {
		return w, nil
	}
	// Each new stack's row as stored now, ours or one another upload
	// inserted first (the insert waited for it to commit; this statement's
	// snapshot is later): its number, and a collision if its frames are
	// not ours.
	if fresh, err = db.storedStacks(ctx, tx, tenant, &w, fresh); err != nil {
		return w, err
	}
	if len(fresh) > 0 {
		return w, fleetscope.Errorf(fleetscope.EINTERNAL, "%d stacks missing from the dictionary after they were stored", len(fresh))
	}
	return w, nil
}

// collision refuses an upload whose n dictionary entries have the keys of
// stored entries with other contents.
func collision(n int) error {
	return fleetscope.Errorf(fleetscope.ECONFLICT, "%d dictionary hash collisions: profile not stored", n)
}

// newStack is a stack of an upload not known to be stored: its index in
// the profile, its frame keys, whether it is idle and its check.
type newStack struct {
	i      int
	frames []int64
	idle   bool
	check  uint64
}

// storedStacks looks stacks of new_stacks up in the tenant's dictionary:
// each one found with the frames the upload has gets its number in w (and
// is remembered in w.stacks); one found with other frames is a collision
// (the upload is refused). It returns those not found.
func (db *DB) storedStacks(ctx context.Context, tx pgx.Tx, tenant int64, w *dictWrite, stacks []newStack) (missing []newStack, err error) {
	if len(stacks) == 0 {
		return nil, nil
	}
	keys := make([]int64, len(stacks))
	for j, st := range stacks {
		keys[j] = w.stackIDs[st.i]
	}
	type stored struct {
		seq  int64
		same bool
	}
	found := make(map[int64]stored, len(stacks))
	rows, err := tx.Query(ctx, `SELECT DISTINCT ON (n.id) n.id, s.seq, s.frames = n.frames FROM new_stacks n JOIN stacks s ON s.tenant_id = $1 AND s.id = n.id
		WHERE n.id = ANY($2) ORDER BY n.id, s.frames = n.frames`, tenant, keys)
	if err != nil {
		return nil, err
	}
	var id int64
	var st stored
	if _, err := pgx.ForEachRow(rows, []any{&id, &st.seq, &st.same}, func() error {
		found[id] = st
		return nil
	}); err != nil {
		return nil, err
	}
	collisions := 0
	for _, s := range stacks {
		key := w.stackIDs[s.i]
		switch f, ok := found[key]; {
		case !ok:
			missing = append(missing, s)
		case !f.same:
			collisions++
		default:
			w.stackSeqs[s.i] = f.seq
			w.stacks[key] = knownEntry{s.check, f.seq}
		}
	}
	if collisions > 0 {
		return nil, collision(collisions)
	}
	return missing, nil
}

// ProfileStacks returns a profile's stack list: the tenant dictionary key
// of each of its stacks, in the order its stored samples refer to them.
// The list is stored as the stacks' numbers (index.ReadStackList), each
// number's key looked up once per replica (numbers).
func (db *DB) ProfileStacks(ctx context.Context, tenant int64, id string) ([]int64, error) {
	u, err := parseID(id)
	if err != nil {
		return nil, err
	}
	var b []byte
	err = db.readTenantRow(ctx, tenant, func(r pgx.Row) error { return r.Scan(&b) },
		`SELECT seqs FROM profile_stacks WHERE tenant_id = $1 AND profile_id = $2`, tenant, u)
	if err != nil {
		return nil, translate(err, "profile "+id)
	}
	seqs, err := index.ReadStackList(b)
	if err != nil {
		return nil, fleetscope.Errorf(fleetscope.EINTERNAL, "profile %s: %v", id, err)
	}
	keys := make([]int64, len(seqs))
	missing := db.numbers.fill(tenant, seqs, keys)
	if len(missing) == 0 {
		return keys, nil
	}
	ask := make([]int64, len(missing))
	for j, i := range missing {
		ask[j] = seqs[i]
	}
	found := make(map[int64]int64, len(ask))
	err = db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		var seq, key int64
		_, err := pgx.ForEachRow(rows, []any{&seq, &key}, func() error {
			found[seq] = key
			return nil
		})
		return err
	}, `SELECT seq, id FROM stacks WHERE tenant_id = $1 AND seq = ANY($2)`, tenant, ask)
	if err != nil {
		return nil, translate(err, "dictionary")
	}
	for _, i := range missing {
		key, ok := found[seqs[i]]
		if !ok {
			return nil, fleetscope.Errorf(fleetscope.ENOTFOUND, "profile %s: stack number %d missing from the dictionary", id, seqs[i])
		}
		keys[i] = key
	}
	db.numbers.remember(tenant, found)
	return keys, nil
}

// numbers remembers the key of each stack number read (stacks.seq → id).
// A number is handed out once, to one stack, and a stored stack's number
// never changes, so an entry is never stale: a number whose stack a
// reclaim deleted is in no stack list any more, and is not asked for. It
// is bounded (emptied when full) and per replica.
type numbers struct {
	mu   sync.Mutex
	keys map[[2]int64]int64 // (tenant, number) → key
}

// maxNumbers bounds the remembered numbers (about 40 bytes each).
const maxNumbers = 2_000_000

// fill sets keys[i] to the key of seqs[i] where it is remembered, and
// returns the indexes of the others.
func (n *numbers) fill(tenant int64, seqs, keys []int64) (missing []int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, s := range seqs {
		k, ok := n.keys[[2]int64{tenant, s}]
		if !ok {
			missing = append(missing, i)
		}
		keys[i] = k
	}
	return missing
}

// remember records the keys of stack numbers read from the dictionary.
func (n *numbers) remember(tenant int64, keys map[int64]int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.keys == nil || len(n.keys)+len(keys) > maxNumbers {
		n.keys = make(map[[2]int64]int64)
	}
	for s, k := range keys {
		n.keys[[2]int64{tenant, s}] = k
	}
}

// Threads returns a profile's distinct (process, thread, CPU), as its stored
// samples index them.
func (db *DB) Threads(ctx context.Context, tenant int64, id string) ([]fleetscope.Thread, error) {
	u, err := parseID(id)
	if err != nil {
		return nil, err
	}
	var flat []int32
	err = db.readTenantRow(ctx, tenant, func(r pgx.Row) error { return r.Scan(&flat) },
		`SELECT threads FROM profile_stacks WHERE tenant_id = $1 AND profile_id = $2`, tenant, u)
	if err != nil {
		return nil, translate(err, "profile "+id)
	}
	if len(flat)%3 != 0 {
		return nil, fmt.Errorf("profile %s: %d thread fields, not triples", id, len(flat))
	}
	out := make([]fleetscope.Thread, len(flat)/3)
	for i := range out {
		out[i] = fleetscope.Thread{PID: flat[3*i], TID: flat[3*i+1], CPU: flat[3*i+2]}
	}
	return out, nil
}

// StackDict builds a dictionary of the tenant's stacks ids: stack i of the
// result is ids[i] (ids must not repeat).
//
// Stack and frame ids are hashes of their contents, so distinct rows are
// distinct stacks and frames: they are added without interning. Each
// stack's frame ids are numbered as they are read (the dictionary's frame
// ids, in order of first use), one map lookup per reference, and the
// frames are then read once each. (The benchmark profile's 19,095 stacks
// hold ~10^6 frame references to 4,947 frames.)
func (db *DB) StackDict(ctx context.Context, tenant int64, ids []int64) (*fleetscope.Dict, error) {
	d := fleetscope.NewDict()
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		pos := make(map[int64]int32, len(ids)) // stack id → its index in ids
		for i, id := range ids {
			if _, dup := pos[id]; dup {
				return fleetscope.Errorf(fleetscope.EINTERNAL, "stack list repeats stack %d", id)
			}
			pos[id] = int32(i)
		}
		spans := make([]fleetscope.Span, len(ids))
		read := make([]bool, len(ids))
		var refs []fleetscope.FrameID // the stacks' frames, in the order read
		frameIdx := make(map[int64]fleetscope.FrameID)
		var frameIDs []int64 // by dictionary frame id
		// Both columns in binary, read as they come: the frame arrays
		// without a []int64 per row (scanning one was ~15% of the load).
		rows, err := tx.Query(ctx, `SELECT id, frames FROM stacks WHERE tenant_id = $1 AND id = ANY($2)`,
			pgx.QueryResultFormats{pgx.BinaryFormatCode, pgx.BinaryFormatCode}, tenant, ids)
		if err != nil {
			return err
		}
		defer rows.Close() // before the transaction ends: open rows keep the connection busy
		for rows.Next() {
			v := rows.RawValues()
			if len(v) != 2 || len(v[0]) != 8 {
				return fleetscope.Errorf(fleetscope.EINTERNAL, "stacks: a row of %d columns", len(v))
			}
			id := int64(binary.BigEndian.Uint64(v[0]))
			i, ok := pos[id]
			if !ok || read[i] {
				return fleetscope.Errorf(fleetscope.EINTERNAL, "stack %d: a row not asked for", id)
			}
			read[i] = true
			start := len(refs)
			err := eachInt8(v[1], func(f int64) {
				fid, ok := frameIdx[f]
				if !ok {
					fid = fleetscope.FrameID(len(frameIDs))
					frameIdx[f] = fid
					frameIDs = append(frameIDs, f)
				}
				refs = append(refs, fid)
			})
			if err != nil {
				return fleetscope.Errorf(fleetscope.EINTERNAL, "stack %d: %v", id, err)
			}
			spans[i] = fleetscope.Span{Off: uint32(start), N: uint32(len(refs) - start)}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		if i := slices.Index(read, false); i >= 0 {
			return fleetscope.Errorf(fleetscope.ENOTFOUND, "stack %d missing from the dictionary", ids[i])
		}
		frames := make([]fleetscope.Frame, len(frameIDs))
		got := 0
		var name string
		var kind int16
		rows, err = tx.Query(ctx, `SELECT id, name, kind FROM frames WHERE tenant_id = $1 AND id = ANY($2)`, tenant, frameIDs)
		if err != nil {
			return err
		}
		var id int64
		_, err = pgx.ForEachRow(rows, []any{&id, &name, &kind}, func() error {
			fid, ok := frameIdx[id]
			if !ok {
				return fleetscope.Errorf(fleetscope.EINTERNAL, "frame %d: a row not asked for", id)
			}
			frames[fid] = fleetscope.Frame{Name: name, Kind: fleetscope.FrameKind(kind)}
			got++
			return nil
		})
		if err != nil {
			return err
		}
		if got != len(frameIDs) {
			return fleetscope.Errorf(fleetscope.ENOTFOUND, "%d of %d frames missing from the dictionary", len(frameIDs)-got, len(frameIDs))
		}
		for _, f := range frames {
			d.AddFrame(f)
		}
		d.AddStacks(refs, spans)
		return nil
	})
	if err != nil {
		return nil, translate(err, "dictionary")
	}
	return d, nil
}

// Dict rebuilds a profile's dictionary from the tenant's: stack i of the
// result is the profile's stack i, as its stored samples refer to it.
func (db *DB) Dict(ctx context.Context, tenant int64, p *fleetscope.ProfileInfo) (*fleetscope.Dict, error) {
	ids, err := db.ProfileStacks(ctx, tenant, p.ID)
	if err != nil {
		return nil, err
	}
	d, err := db.StackDict(ctx, tenant, ids)
	if err != nil {
		return nil, err
	}
	for _, e := range p.Events {
		d.Event(e.Name)
	}
	return d, nil
}

// eachInt8 calls f with the elements of a one-dimensional bigint[] as
// Postgres sends it in binary (array_send): its dimension count, a
// has-nulls flag, the element type, the dimension's length and lower
// bound, then each element as a 4-byte length (-1: NULL) and 8 bytes,
// big-endian.
func eachInt8(b []byte, f func(int64)) error {
	if len(b) < 12 {
		return fmt.Errorf("bigint[] of %d bytes", len(b))
	}
	ndim := binary.BigEndian.Uint32(b)
	if ndim == 0 {
		return nil
	}
	if ndim != 1 || len(b) < 20 || binary.BigEndian.Uint32(b[8:]) != pgtype.Int8OID {
		return fmt.Errorf("not a one-dimensional bigint[] (%d dimensions)", ndim)
	}
	n := int(binary.BigEndian.Uint32(b[12:]))
	b = b[20:]
	if len(b) != 12*n {
		return fmt.Errorf("bigint[] of %d elements in %d bytes", n, len(b))
	}
	for ; len(b) > 0; b = b[12:] {
		if binary.BigEndian.Uint32(b) != 8 {
			return fmt.Errorf("bigint[] with a NULL element")
		}
		f(int64(binary.BigEndian.Uint64(b[4:])))
	}
	return nil
}
