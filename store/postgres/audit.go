package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/fleetscope/fleetscope"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// audit records an action for the tenant called name.
func (db *DB) audit(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, tenantName, actor, action, target string, detail map[string]string) error {
	d, _ := json.Marshal(nonNil(detail))
	var one int
	return q.QueryRow(ctx, `INSERT INTO audit_log (tenant_id, id, actor, action, target, detail)
		SELECT id, $2, $3, $4, $5, $6 FROM tenants WHERE name = $1 RETURNING 1`, tenantName, uuid.New(), actor, action, target, d).Scan(&one)
}

// auditTx records an action within a transaction (the action's own).
func auditTx(ctx context.Context, tx pgx.Tx, tenant int64, actor, action, target string, detail map[string]string) error {
	d, _ := json.Marshal(nonNil(detail))
	_, err := tx.Exec(ctx, `INSERT INTO audit_log (tenant_id, id, actor, action, target, detail) VALUES ($1, $2, $3, $4, $5, $6)`,
		tenant, uuid.New(), actor, action, target, d)
	return err
}

// AuditEvents lists a tenant's audit log, newest first.
func (db *DB) AuditEvents(ctx context.Context, tenant int64, pageSize int, pageToken string) ([]fleetscope.AuditEvent, string, error) {
	if pageSize <= 0 || pageSize > 1000 {
		pageSize = 100
	}
	args := []any{tenant}
	where := "tenant_id = $1"
	if pageToken != "" {
		t, id, err := decodeToken(pageToken)
		if err != nil {
			return nil, "", err
		}
		args = append(args, t, id)
		where += " AND (at, id) < ($2, $3)"
	}
	var out []fleetscope.AuditEvent
	var ids []uuid.UUID
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			var e fleetscope.AuditEvent
			var id uuid.UUID
			var detail []byte
			if err := rows.Scan(&id, &e.At, &e.Actor, &e.Action, &e.Target, &detail); err != nil {
				return err
			}
			json.Unmarshal(detail, &e.Detail)
			out = append(out, e)
			ids = append(ids, id)
		}
		return nil
	}, `SELECT id, at, actor, action, target, detail FROM audit_log WHERE `+where+fmt.Sprintf(` ORDER BY at DESC, id DESC LIMIT %d`, pageSize+1), args...)
	if err != nil {
		return nil, "", translate(err, "audit log")
	}
	next := ""
	if len(out) > pageSize {
		out = out[:pageSize]
		next = encodeToken(out[pageSize-1].At, ids[pageSize-1].String())
	}
	return out, next, nil
}
