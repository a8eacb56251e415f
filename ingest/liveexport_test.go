package ingest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/store/postgres"
)

// endingDB ends a stream just before its second batch is applied: a
// stream ended (by the idle end, or an export two minutes later) while a
// request stored its segment.
type endingDB struct {
	*postgres.DB
	calls int
}

func (d *endingDB) AppendLiveSegment(ctx context.Context, tenant int64, stream string, seq int64, segment string, first fleetscope.LiveStream) (bool, error) {
	if d.calls++; d.calls == 2 {
		if ok, err := d.EndLiveStream(ctx, tenant, stream, time.Now().Add(time.Hour)); !ok || err != nil {
			return false, fmt.Errorf("the test could not end the stream: %v %v", ok, err)
		}
	}
	return d.DB.AppendLiveSegment(ctx, tenant, stream, seq, segment, first)
}

func exportLive(t *testing.T, db ingest.LiveIndex) (*ingest.Live, fleetscope.Principal, *postgres.DB) {
	s, p := service(t, t.TempDir())
	pg := s.DB.(*postgres.DB)
	l := &ingest.Live{Ingest: s, DB: db, Delete: func(ctx context.Context, tenant int64, id, actor string) error {
		_, err := pg.DeleteProfile(ctx, tenant, id, actor)
		return err
	}}
	if db == nil {
		l.DB = pg
	}
	return l, p, pg
}

// TestAppendExportOnce: an export's batch sent again, or sent by many
// requests at once, is one segment of its stream, and different batches
// sent at once are each one segment, in some order.
func TestAppendExportOnce(t *testing.T) {
	l, p, pg := exportLive(t, nil)
	ctx := context.Background()
	m := ingest.Meta{App: "otlp", Host: "h1"}
	chunk := func(i int) []byte {
		return []byte(perfSample("app", fmt.Sprintf("1795000000.%06d", i+1), "main", fmt.Sprintf("f%d", i)))
	}
	if ok, err := l.AppendExport(ctx, p, "s", m, chunk(0)); !ok || err != nil {
		t.Fatalf("first batch: %v %v", ok, err)
	}
	if ok, err := l.AppendExport(ctx, p, "s", m, chunk(0)); ok || err != nil {
		t.Fatalf("the same batch again: applied %v %v, want acknowledged, not applied", ok, err)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.AppendExport(ctx, p, "s", m, chunk(1+i%8)); err != nil {
				t.Errorf("batch %d: %v", 1+i%8, err)
			}
		}()
	}
	wg.Wait()
	st, err := pg.LiveStream(ctx, p.TenantID, "s")
	if err != nil || len(st.Segments) != 9 || st.NextSeq != 9 {
		t.Fatalf("after 9 distinct batches, 8 of them sent twice at once: %d segments, next %d, %v", len(st.Segments), st.NextSeq, err)
	}
	ps, _, err := pg.Search(ctx, p.TenantID, fleetscope.ProfileFilter{App: "otlp", PageSize: 100})
	if err != nil || len(ps) != 9 {
		t.Fatalf("%d profiles stored, want the 9 segments: %v", len(ps), err)
	}
}

// TestAppendExportToEndedStream: a stream that ends while a request
// stores its batch refuses the batch (ECONFLICT: the caller goes on in
// another stream) and keeps no segment of it: the batch is counted once,
// where it goes next.
func TestAppendExportToEndedStream(t *testing.T) {
	db := &endingDB{}
	l, p, pg := exportLive(t, db)
	db.DB = pg
	ctx := context.Background()
	m := ingest.Meta{App: "otlp"}
	if ok, err := l.AppendExport(ctx, p, "s", m, []byte(perfSample("app", "1795000000.000001", "main", "f"))); !ok || err != nil {
		t.Fatalf("first batch: %v %v", ok, err)
	}
	_, err := l.AppendExport(ctx, p, "s", m, []byte(perfSample("app", "1795000000.000002", "main", "g")))
	if fleetscope.ErrorCode(err) != fleetscope.ECONFLICT {
		t.Fatalf("a batch whose stream ended meanwhile: %v, want ECONFLICT", err)
	}
	ps, _, err := pg.Search(ctx, p.TenantID, fleetscope.ProfileFilter{App: "otlp", PageSize: 100})
	if err != nil || len(ps) != 1 {
		t.Fatalf("%d profiles: %v, want the first batch's segment alone (the refused batch's gone)", len(ps), err)
	}
}
