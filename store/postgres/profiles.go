package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

const profileColumns = `id, app, host, labels, format, filename, events, default_event, samples, timed,
	start_second, duration_nanos, time_unit_nanos, start_time, end_time, time_source, size_bytes,
	encode(sha256, 'hex'), blob_key, meta, created_at, wall_shift_nanos, samples_tier IN (1, 2), samples_digest`

// leanProfileColumns are profileColumns without the recording's metadata
// (Meta nil): a fleet query selects thousands of profiles a day and never
// shows their perf headers, whose decoding was a third of a day's merged
// flame graph.
var leanProfileColumns = strings.Replace(profileColumns, "blob_key, meta,", "blob_key, 'null'::jsonb,", 1)

func scanProfile(row pgx.Row) (*fleetscope.ProfileInfo, error) {
	var p fleetscope.ProfileInfo
	var id [16]byte // binary; a uuid.UUID would be scanned as text (FleetRows)
	var labels, events, meta []byte
	err := row.Scan(&id, &p.App, &p.Host, &labels, &p.Format, &p.Filename, &events, &p.DefaultEvent, &p.Samples, &p.Timed,
		&p.StartSecond, &p.DurationNanos, &p.TimeUnitNanos, &p.StartTime, &p.EndTime, &p.TimeSource, &p.SizeBytes,
		&p.SHA256, &p.BlobKey, &meta, &p.CreatedAt, &p.WallShiftNanos, &p.Cold, &p.SamplesDigest)
	if err != nil {
		return nil, err
	}
	p.ID = uuid.UUID(id).String()
	if err := json.Unmarshal(labels, &p.Labels); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(events, &p.Events); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(meta, &p.Meta); err != nil {
		return nil, err
	}
	return &p, nil
}

// parseID checks a profile id; a malformed one is simply not found.
func parseID(id string) (uuid.UUID, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return u, fleetscope.Errorf(fleetscope.ENOTFOUND, "profile %q not found", id)
	}
	return u, nil
}

// Profile returns one of the tenant's profiles. Returns ENOTFOUND if there
// is none with that id (or it belongs to another tenant).
func (db *DB) Profile(ctx context.Context, tenant int64, id string) (*fleetscope.ProfileInfo, error) {
	u, err := parseID(id)
	if err != nil {
		return nil, err
	}
	var p *fleetscope.ProfileInfo
	err = db.readTenantRow(ctx, tenant, func(row pgx.Row) (err error) {
		p, err = scanProfile(row)
		return err
	}, `SELECT `+profileColumns+` FROM profiles WHERE tenant_id = $1 AND id = $2`, tenant, u)
	return p, translate(err, "profile "+id)
}

// ProfileBySHA256 returns the tenant's profile with these bytes, or
// ENOTFOUND.
func (db *DB) ProfileBySHA256(ctx context.Context, tenant int64, sum []byte) (*fleetscope.ProfileInfo, error) {
	var p *fleetscope.ProfileInfo
	err := db.readTenantRow(ctx, tenant, func(row pgx.Row) (err error) {
		p, err = scanProfile(row)
		return err
	}, `SELECT `+profileColumns+` FROM profiles WHERE tenant_id = $1 AND sha256 = $2`, tenant, sum)
	return p, translate(err, "profile")
}

// BlobInUse reports whether any profile of any tenant still refers to key.
// (SELECT 1, not SELECT: Citus fails to read back a subquery's empty row.)
func (db *DB) BlobInUse(ctx context.Context, key string) (bool, error) {
	var used bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM profiles WHERE blob_key = $1)`, key).Scan(&used)
	return used, err
}

// InsertProfile writes a parsed profile's index in one transaction: the
// profile row, new frames and stacks of the tenant dictionary, the
// profile's stack list and stack totals, its per-second rows and its cells in absolute time
// (by ten seconds, each with its seconds, and by the minute: fleet_tens and
// fleet_minutes). If the tenant already has a profile with the same bytes, nothing is written and that profile is
// returned with created = false. p.ID is assigned. beforeCommit, if set, runs
// last inside the transaction: its error rolls everything back (ingest waits
// there for the raw file to be durable).
func (db *DB) InsertProfile(ctx context.Context, tenant int64, p *fleetscope.ProfileInfo, sum []byte, dict *fleetscope.Dict, ix *index.Index, beforeCommit func() error) (*fleetscope.ProfileInfo, bool, error) {
	id := uuid.New()
	labels, _ := json.Marshal(nonNil(p.Labels))
	events, _ := json.Marshal(p.Events)
	meta, _ := json.Marshal(nonNil(p.Meta))
	day := time.Now().UTC().Truncate(24 * time.Hour)
	totals, err := index.EncodeStackTotals(ix)
	if err != nil {
		return nil, false, fleetscope.Wrap(err, fleetscope.EINTERNAL, "profile's stack totals")
	}
	var out *fleetscope.ProfileInfo // the row as stored, when it is new
	var w dictWrite
	err = db.retry(ctx, func() error {
		return db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
			var err error
			out, err = scanProfile(tx.QueryRow(ctx, `
			INSERT INTO profiles (tenant_id, id, sha256, app, host, labels, format, filename, events, default_event,
				samples, timed, start_second, duration_nanos, time_unit_nanos, start_time, end_time, time_source,
				size_bytes, blob_key, meta, day, wall_shift_nanos)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
			ON CONFLICT (tenant_id, sha256) DO NOTHING
			RETURNING `+profileColumns,
				tenant, id, sum, p.App, p.Host, labels, p.Format, p.Filename, events, p.DefaultEvent,
				p.Samples, p.Timed, p.StartSecond, p.DurationNanos, p.TimeUnitNanos, p.StartTime, p.EndTime, p.TimeSource,
				p.SizeBytes, p.BlobKey, meta, day, p.WallShiftNanos))
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // the same bytes are already stored
			}
			if err != nil {
				return err
			}
			w, err = db.writeDictionary(ctx, tx, tenant, id, dict)
			if err != nil {
				return err
			}
			threads := make([]int32, 0, 3*len(ix.Threads))
			for _, t := range ix.Threads {
				threads = append(threads, t.PID, t.TID, t.CPU)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO profile_stacks (tenant_id, profile_id, seqs, threads, dict_bytes, totals) VALUES ($1, $2, $3, $4, $5, $6)`,
				tenant, id, index.AppendStackList(nil, w.stackSeqs), threads, w.bytes, totals); err != nil {
				return err
			}
			if err := writeSeconds(ctx, tx, tenant, id, day, ix); err != nil {
				return err
			}
			if err := writeFleet(ctx, tx, tenant, id, day, p, dict, ix); err != nil {
				return err
			}
			if err := touchVersions(ctx, tx, tenant, id); err != nil {
				return err
			}
			if beforeCommit != nil {
				return beforeCommit()
			}
			return nil
		})
	})
	if err != nil {
		return nil, false, translate(err, "profile")
	}
	if out == nil {
		existing, err := db.ProfileBySHA256(ctx, tenant, sum)
		return existing, false, err
	}
	db.known.remember(tenant, w.gen, w.frames, w.stacks)
	return out, true, nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// DeleteProfile removes a profile's index rows in one transaction and
// returns its blob key (its dictionary rows stay, for ReclaimDictionaries); the caller deletes the blob unless another profile
// uses it (BlobInUse). Returns ENOTFOUND if the tenant has no such profile.
func (db *DB) DeleteProfile(ctx context.Context, tenant int64, id, actor string) (string, error) {
	u, err := parseID(id)
	if err != nil {
		return "", err
	}
	var key string
	err = db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		// The dictionary bytes its upload added outlive it, unattributed,
		// until a reclaim deletes the rows no profile uses (one is due).
		var dictBytes int64
		if err := tx.QueryRow(ctx, `DELETE FROM profile_stacks WHERE tenant_id = $1 AND profile_id = $2 RETURNING dict_bytes`, tenant, u).Scan(&dictBytes); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err := tx.QueryRow(ctx, `DELETE FROM profiles WHERE tenant_id = $1 AND id = $2 RETURNING blob_key`, tenant, u).Scan(&key); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO dictionaries AS d (tenant_id, bytes, deletions) VALUES ($1, $2, 1)
			ON CONFLICT (tenant_id) DO UPDATE SET bytes = d.bytes + excluded.bytes, deletions = d.deletions + 1`, tenant, dictBytes); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM seconds WHERE tenant_id = $1 AND profile_id = $2`, tenant, u); err != nil {
			return err
		}
		if err := dropStackBuckets(ctx, tx, tenant, u); err != nil {
			return err
		}
		if err := dropRollups(ctx, tx, tenant, u); err != nil {
			return err
		}
		for _, table := range fleetTables {
			if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE tenant_id = $1 AND profile_id = $2`, tenant, u); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO audit_log (tenant_id, id, actor, action, target) VALUES ($1, $2, $3, 'profile.delete', $4)`,
			tenant, uuid.New(), actor, id)
		return err
	})
	return key, translate(err, "profile "+id)
}

// UpdateProfile changes a profile's app, host and labels in one
// transaction: the profile row, its cells in absolute time (fleet_tens
// and fleet_minutes carry app and host, so fleet queries by the
// new ones find it) and an audit entry (profile.update, with the values before and after of what
// changed). A change to nothing new writes nothing. Returns ENOTFOUND if
// the tenant has no such profile, EINVALID if u is not a valid change.
func (db *DB) UpdateProfile(ctx context.Context, tenant int64, id string, u fleetscope.ProfileUpdate, actor string) (*fleetscope.ProfileInfo, error) {
	uid, err := parseID(id)
	if err != nil {
		return nil, err
	}
	err = db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		var app, host string
		var raw []byte
		if err := tx.QueryRow(ctx, `SELECT app, host, labels FROM profiles WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenant, uid).Scan(&app, &host, &raw); err != nil {
			return err
		}
		var labels map[string]string
		if err := json.Unmarshal(raw, &labels); err != nil {
			return err
		}
		newApp, newHost, newLabels, err := u.Apply(app, host, labels)
		if err != nil {
			return err
		}
		detail := map[string]string{}
		for _, f := range []struct{ name, was, now string }{
			{"app", app, newApp}, {"host", host, newHost},
			{"labels", fleetscope.FormatLabels(labels), fleetscope.FormatLabels(newLabels)},
		} {
			if f.was != f.now {
				detail[f.name+".was"], detail[f.name] = f.was, f.now
			}
		}
		if len(detail) == 0 {
			return nil
		}
		b, _ := json.Marshal(newLabels)
		if _, err := tx.Exec(ctx, `UPDATE profiles SET app = $3, host = $4, labels = $5 WHERE tenant_id = $1 AND id = $2`,
			tenant, uid, newApp, newHost, b); err != nil {
			return err
		}
		if newApp != app || newHost != host {
			if err := dropStackBuckets(ctx, tx, tenant, uid); err != nil {
				return err
			}
			if err := dropRollups(ctx, tx, tenant, uid); err != nil {
				return err
			}
			for _, table := range fleetTables {
				if _, err := tx.Exec(ctx, `UPDATE `+table+` SET app = $3, host = $4 WHERE tenant_id = $1 AND profile_id = $2`,
					tenant, uid, newApp, newHost); err != nil {
					return err
				}
			}
			// Its samples' new hours are new versions too.
			if err := touchVersions(ctx, tx, tenant, uid); err != nil {
				return err
			}
		}
		return auditTx(ctx, tx, tenant, actor, "profile.update", id, detail)
	})
	if err != nil {
		return nil, translate(err, "profile "+id)
	}
	return db.Profile(ctx, tenant, id)
}
