// Package batch is what every parser under ingest/ shares on its way out:
// it gathers parsed samples into batches for the caller's sink, in input
// order, and keeps the profile's counts and time span (Samples, Untimed,
// MinNanos, MaxNanos) as samples pass. It parses nothing itself.
package batch

import "github.com/fleetscope/fleetscope"

// Size is how many samples a batch holds before it is handed on.
const Size = 4096

// Writer batches samples for one profile.
type Writer struct {
	p    *fleetscope.Profile
	sink func(*fleetscope.Profile, []fleetscope.Sample) error
	buf  []fleetscope.Sample
}

// NewProfile returns an empty profile of format with a fresh dictionary.
func NewProfile(format string) *fleetscope.Profile {
	return &fleetscope.Profile{Format: format, Meta: map[string]string{}, Dict: fleetscope.NewDict(), MinNanos: fleetscope.NoTime}
}

// New returns a Writer that hands p's samples to sink.
func New(p *fleetscope.Profile, sink func(*fleetscope.Profile, []fleetscope.Sample) error) *Writer {
	return &Writer{p: p, sink: sink, buf: make([]fleetscope.Sample, 0, Size)}
}

// Add records s, handing a full batch to the sink. It returns the sink's
// error.
func (w *Writer) Add(s fleetscope.Sample) error {
	p := w.p
	p.Samples++
	if s.TimeNanos == fleetscope.NoTime {
		p.Untimed++
	} else {
		if p.MinNanos == fleetscope.NoTime || s.TimeNanos < p.MinNanos {
			p.MinNanos = s.TimeNanos
		}
		if p.Samples-p.Untimed == 1 || s.TimeNanos > p.MaxNanos {
			p.MaxNanos = s.TimeNanos
		}
	}
	w.buf = append(w.buf, s)
	if len(w.buf) == cap(w.buf) {
		return w.Flush()
	}
	return nil
}

// Flush hands the samples gathered so far to the sink.
func (w *Writer) Flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	err := w.sink(w.p, w.buf)
	w.buf = w.buf[:0]
	return err
}
