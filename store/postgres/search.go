package postgres

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Search returns the tenant's profiles matching f, newest first, and the
// token of the next page ("" on the last).
func (db *DB) Search(ctx context.Context, tenant int64, f fleetscope.ProfileFilter) ([]*fleetscope.ProfileInfo, string, error) {
	if f.PageSize <= 0 {
		f.PageSize = 50
	}
	if f.PageSize > 1000 {
		return nil, "", fleetscope.Errorf(fleetscope.EINVALID, "page size %d: at most 1000", f.PageSize)
	}
	where := []string{"tenant_id = $1"}
	args := []any{tenant}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.App != "" {
		add("app = $%d", f.App)
	}
	if f.Host != "" {
		add("host = $%d", f.Host)
	}
	if len(f.Labels) > 0 {
		b, _ := json.Marshal(f.Labels)
		add("labels @> $%d", b)
	}
	if !f.Since.IsZero() {
		add("end_time >= $%d", f.Since)
	}
	if !f.Until.IsZero() {
		add("start_time < $%d", f.Until)
	}
	if f.PageToken != "" {
		t, id, err := decodeToken(f.PageToken)
		if err != nil {
			return nil, "", err
		}
		args = append(args, t, id)
		where = append(where, fmt.Sprintf("(start_time, id) < ($%d, $%d)", len(args)-1, len(args)))
	}
	q := `SELECT ` + profileColumns + ` FROM profiles WHERE ` + strings.Join(where, " AND ") +
		fmt.Sprintf(` ORDER BY start_time DESC, id DESC LIMIT %d`, f.PageSize+1)
	var out []*fleetscope.ProfileInfo
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			p, err := scanProfile(rows)
			if err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	}, q, args...)
	if err != nil {
		return nil, "", translate(err, "search")
	}
	next := ""
	if len(out) > f.PageSize {
		out = out[:f.PageSize]
		last := out[len(out)-1]
		next = encodeToken(last.StartTime, last.ID)
	}
	return out, next, nil
}

func encodeToken(t time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(t.UTC().Format(time.RFC3339Nano) + "|" + id))
}

func decodeToken(tok string) (time.Time, uuid.UUID, error) {
	bad := fleetscope.Errorf(fleetscope.EINVALID, "invalid page token")
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return time.Time{}, uuid.UUID{}, bad
	}
	ts, id, ok := strings.Cut(string(b), "|")
	if !ok {
		return time.Time{}, uuid.UUID{}, bad
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return time.Time{}, uuid.UUID{}, bad
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return time.Time{}, uuid.UUID{}, bad
	}
	return t, u, nil
}
