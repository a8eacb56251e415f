package query

import (
	"bytes"
	"context"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// storedSeconds reads event ev's rows of a profile for its relative
// seconds [from, to] (from > to: all): from the index, or, for a profile
// the sample tier moved out of it (Cold), from its raw file parsed again,
// which gives back the same rows: the sweeper checked it before the move,
// and rows that do not hash to what it checked are an error, never an
// answer.
func (s *Service) storedSeconds(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, ev int, from, to int64) ([]index.Second, error) {
	if !info.Cold {
		return s.src.Seconds(ctx, tenant, info.ID, ev, from, to)
	}
	byEvent, err := s.coldRows(ctx, tenant, info)
	if err != nil {
		return nil, err
	}
	if ev < 0 || ev >= len(byEvent) {
		return nil, nil
	}
	return index.SecondsIn(byEvent[ev], from, to), nil
}

// storedCells reads event ev's rows for their heatmap cells (Cells), from
// the index (its rows' busy cells counted from their offsets) or the raw
// file as storedSeconds does.
func (s *Service) storedCells(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, ev int) ([]index.Second, error) {
	if info.Cold {
		return s.storedSeconds(ctx, tenant, info, ev, 0, -1)
	}
	secs, err := s.src.Cells(ctx, tenant, info.ID, ev)
	if err != nil {
		return nil, err
	}
	if err := index.FillMissingCells(secs, info.TimeUnitNanos, info.Events[ev].Period, info.Events[ev].Weighted); err != nil {
		return nil, fleetscope.Wrap(err, fleetscope.EINTERNAL, "profile "+info.ID+": corrupt index row")
	}
	return secs, nil
}

// coldRows returns a cold profile's rows by event, parsed from its raw
// file once and cached like any other rows. One parse serves every
// request that meets it in flight; it goes on if the request that began it
// goes away, for a minute at most.
func (s *Service) coldRows(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo) ([][]index.Second, error) {
	if s.reindex == nil {
		return nil, fleetscope.Errorf(fleetscope.EINTERNAL, "profile %s: its samples are kept only in its raw file, which this server cannot read", info.ID)
	}
	return s.cold.Load(ctx, profileKey{tenant, info.ID}, func() ([][]index.Second, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		ix, err := s.reindex(ctx, info)
		if err != nil {
			return nil, err
		}
		if err := ix.Reunit(info.TimeUnitNanos); err != nil { // stored before its unit was found
			return nil, fleetscope.Wrap(err, fleetscope.EINTERNAL, "profile "+info.ID+": "+err.Error())
		}
		if len(ix.Events) != len(info.Events) {
			return nil, fleetscope.Errorf(fleetscope.EINTERNAL, "profile %s: its raw file gives %d events, %d stored", info.ID, len(ix.Events), len(info.Events))
		}
		byEvent := ix.ByEvent(len(ix.Events))
		if d := index.Digest(byEvent); !bytes.Equal(d[:], info.SamplesDigest) {
			return nil, fleetscope.Errorf(fleetscope.EINTERNAL, "profile %s: its raw file no longer gives back the samples moved out of the index (read by another version of fleetscope's parsers?)", info.ID)
		}
		return byEvent, nil
	})
}

// coldBytes is the memory a cold profile's rows hold (for the cache).
func coldBytes(_ profileKey, byEvent [][]index.Second) int64 {
	var n int64
	for _, rows := range byEvent {
		n += index.SecondsBytes(rows)
	}
	return n
}
