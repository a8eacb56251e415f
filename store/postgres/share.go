package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
)

// sharePrefix starts every share token.
const sharePrefix = "fss_"

// CreateShareLink makes a link to one profile range of the tenant, valid
// until expires, and returns its secret token (shown only now; the index
// keeps its SHA-256). Returns ENOTFOUND if the tenant has no such profile.
func (db *DB) CreateShareLink(ctx context.Context, tenant int64, l fleetscope.ShareLink) (string, fleetscope.ShareLink, error) {
	var u *uuid.UUID
	var fleet []byte
	if l.Fleet != nil {
		var err error
		if fleet, err = json.Marshal(fleetJSONOf(l.Fleet)); err != nil {
			return "", l, err
		}
	} else {
		id, err := parseID(l.ProfileID)
		if err != nil {
			return "", l, err
		}
		u = &id
	}
	var raw [25]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", l, err
	}
	body := strings.ToLower(b32.EncodeToString(raw[:]))
	token := sharePrefix + body
	h := sha256.Sum256([]byte(token))
	l.TenantID, l.ID = tenant, sharePrefix+body[:8]
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		if u != nil {
			var one int
			if err := tx.QueryRow(ctx, `SELECT 1 FROM profiles WHERE tenant_id = $1 AND id = $2`, tenant, *u).Scan(&one); err != nil {
				return err
			}
		}
		err := tx.QueryRow(ctx, `INSERT INTO share_links (tenant_id, id, token_hash, profile_id, fleet, event, start_nanos, end_nanos, created_by, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING created_at`,
			tenant, l.ID, h[:], u, fleet, l.Event, l.Start, l.End, l.CreatedBy, l.ExpiresAt).Scan(&l.CreatedAt)
		if err != nil {
			return err
		}
		subject := map[string]string{"profile": l.ProfileID}
		if l.Fleet != nil {
			subject = map[string]string{"fleet": l.Fleet.App}
		}
		return auditTx(ctx, tx, tenant, l.CreatedBy, "share.create", l.ID, subject)
	})
	if err != nil {
		return "", l, translate(err, "profile "+l.ProfileID)
	}
	return token, l, nil
}

// fleetJSON is how a fleet link's selection is kept (share_links.fleet).
type fleetJSON struct {
	App             string      `json:"app"`
	Hosts           []string    `json:"hosts,omitempty"`
	Labels          []labelJSON `json:"labels,omitempty"`
	From            int64       `json:"from"`
	To              int64       `json:"to"`
	Event           string      `json:"event,omitempty"`
	IncludeIdle     bool        `json:"includeIdle,omitempty"`
	Function        string      `json:"function,omitempty"`
	ExcludeFunction string      `json:"excludeFunction,omitempty"`
}

type labelJSON struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Not   bool   `json:"not,omitempty"`
}

func fleetJSONOf(s *fleetscope.FleetSelection) fleetJSON {
	out := fleetJSON{App: s.App, Hosts: s.Hosts, From: s.From, To: s.To, Event: s.Event, IncludeIdle: s.IncludeIdle,
		Function: s.Filter.Function, ExcludeFunction: s.Filter.ExcludeFunction}
	for _, l := range s.Labels {
		out.Labels = append(out.Labels, labelJSON{Name: l.Name, Value: l.Value, Not: l.Not})
	}
	return out
}

// selection reads a stored fleet link's selection back (checked again, so
// its label matchers are ready to use).
func (f fleetJSON) selection() (*fleetscope.FleetSelection, error) {
	s := &fleetscope.FleetSelection{App: f.App, Hosts: f.Hosts, From: f.From, To: f.To, Event: f.Event, IncludeIdle: f.IncludeIdle,
		Filter: fleetscope.Filter{Function: f.Function, ExcludeFunction: f.ExcludeFunction}}
	for _, l := range f.Labels {
		s.Labels = append(s.Labels, fleetscope.LabelMatch{Name: l.Name, Value: l.Value, Not: l.Not})
	}
	return s, s.Check()
}

const shareColumns = `tenant_id, id, coalesce(profile_id::text, ''), fleet, event, start_nanos, end_nanos, created_by, created_at, expires_at, coalesce(revoked_at, 'epoch')`

func scanShare(r pgx.Row) (fleetscope.ShareLink, error) {
	var l fleetscope.ShareLink
	var fleet []byte
	err := r.Scan(&l.TenantID, &l.ID, &l.ProfileID, &fleet, &l.Event, &l.Start, &l.End, &l.CreatedBy, &l.CreatedAt, &l.ExpiresAt, &l.RevokedAt)
	if l.RevokedAt.Unix() == 0 {
		l.RevokedAt = time.Time{}
	}
	if err == nil && fleet != nil {
		var f fleetJSON
		if err = json.Unmarshal(fleet, &f); err == nil {
			l.Fleet, err = f.selection()
		}
	}
	return l, err
}

// ShareLinks lists the tenant's share links.
func (db *DB) ShareLinks(ctx context.Context, tenant int64) ([]fleetscope.ShareLink, error) {
	var out []fleetscope.ShareLink
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			l, err := scanShare(rows)
			if err != nil {
				return err
			}
			out = append(out, l)
		}
		return nil
	}, `SELECT `+shareColumns+` FROM share_links WHERE tenant_id = $1 ORDER BY created_at DESC, id`, tenant)
	return out, translate(err, "share links")
}

// RevokeShareLink revokes a link at once; a second revocation keeps the
// first time (least() skips NULL; see RevokeKey).
func (db *DB) RevokeShareLink(ctx context.Context, tenant int64, id, actor string) error {
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE share_links SET revoked_at = least(revoked_at, now()) WHERE tenant_id = $1 AND id = $2`, tenant, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fleetscope.Errorf(fleetscope.ENOTFOUND, "share link %q not found", id)
		}
		return auditTx(ctx, tx, tenant, actor, "share.revoke", id, nil)
	})
	return translate(err, "share link")
}

// ResolveShareLink finds a live link by its token. Unknown, revoked and
// expired links, and links of a disabled tenant, alike are ENOTFOUND;
// nothing is cached, so a revocation holds from the next request on.
func (db *DB) ResolveShareLink(ctx context.Context, token string) (fleetscope.ShareLink, error) {
	if !strings.HasPrefix(token, sharePrefix) || len(token) > 128 {
		return fleetscope.ShareLink{}, fleetscope.Errorf(fleetscope.ENOTFOUND, "share link not found")
	}
	h := sha256.Sum256([]byte(token))
	l, err := scanShare(db.pool.QueryRow(ctx, `SELECT `+shareColumns+` FROM share_links
		WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > now()
		  AND EXISTS (SELECT FROM tenants t WHERE t.id = share_links.tenant_id AND t.disabled_at IS NULL)`, h[:]))
	if err != nil {
		if fleetscope.ErrorCode(translate(err, "share link")) == fleetscope.ENOTFOUND {
			return l, fleetscope.Errorf(fleetscope.ENOTFOUND, "share link not found (or revoked, or expired)")
		}
		return l, translate(err, "share link")
	}
	return l, nil
}
