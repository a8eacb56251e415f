package index

import "encoding/binary"

// Stack totals are a profile's samples counted whole, by event and stack:
// what a fleet count adds for a profile whose every sample lies inside
// its window, read as one value instead of all its rows (a one-minute
// profile of a busy host: ~19,000 totals for ~57,000 samples).
//
// The encoding, for each event of Index.Events in order: uvarint n (one
// more than the highest stack id counted; 0: none), n uvarint counts, then
// a byte, 1 if n uvarint sums of the samples' periods follow (the event's
// rows store periods), 0 if every sample has the event's period.

// EncodeStackTotals returns ix's stack totals. A corrupt row is an error.
func EncodeStackTotals(ix *Index) ([]byte, error) {
	var out []byte
	counts, sums := []uint64{}, []uint64{}
	for ev := range ix.Events {
		counts, sums = counts[:0], sums[:0]
		periods := false
		for i := range ix.Seconds {
			s := &ix.Seconds[i]
			if int(s.Event) != ev {
				continue
			}
			periods = periods || s.Periods != nil
			err := s.Walk(ix.Events[ev].Period, func(_, stack, _, period uint64) {
				for uint64(len(counts)) <= stack {
					counts, sums = append(counts, 0), append(sums, 0)
				}
				counts[stack]++
				sums[stack] += period
			})
			if err != nil {
				return nil, err
			}
		}
		out = binary.AppendUvarint(out, uint64(len(counts)))
		for _, c := range counts {
			out = binary.AppendUvarint(out, c)
		}
		if !periods {
			out = append(out, 0)
			continue
		}
		out = append(out, 1)
		for _, p := range sums {
			out = binary.AppendUvarint(out, p)
		}
	}
	return out, nil
}

// AddStackTotals adds event ev's totals in b to counts, as a Counter with
// period and byPeriod counting every sample of the event's rows would:
// each stack's samples, or the sum of their periods with byPeriod; and,
// when weights is not nil, the sum of their periods to weights (as
// CountWeights). counts and weights must hold every stack id counted; b
// not in the encoding, or without event ev, is an error.
func AddStackTotals(b []byte, ev int, period uint64, byPeriod bool, counts, weights []uint64) error {
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	skip := func(n uint64) bool { // n uvarints
		for ; n > 0; n-- {
			if _, ok := uv(); !ok {
				return false
			}
		}
		return true
	}
	for e := 0; ; e++ {
		n, ok := uv()
		if !ok || n > uint64(len(b)) { // each count takes a byte at least
			return errCorrupt
		}
		if e < ev {
			if !skip(n) || len(b) == 0 {
				return errCorrupt
			}
			sums := b[0]
			b = b[1:]
			if sums == 1 && !skip(n) || sums > 1 {
				return errCorrupt
			}
			continue
		}
		if n > uint64(len(counts)) || weights != nil && n > uint64(len(weights)) {
			return errCorrupt
		}
		cs := b
		if !skip(n) || len(b) == 0 || b[0] > 1 {
			return errCorrupt
		}
		sums := b[0] == 1
		ps := b[1:]
		b = cs
		for st := range n {
			c, _ := uv() // read once by skip: well formed
			p := c * period
			if sums {
				v, k := binary.Uvarint(ps)
				if k <= 0 {
					return errCorrupt
				}
				p, ps = v, ps[k:]
			}
			if byPeriod {
				counts[st] += p
			} else {
				counts[st] += c
			}
			if weights != nil {
				weights[st] += p
			}
		}
		return nil
	}
}
