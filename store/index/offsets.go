package index

import (
	"encoding/binary"
	"math/bits"
)

// A row's offsets are its samples' times within the second, in the
// profile's time unit, sorted. They are stored as the first offset
// (uvarint), then, with more than one sample, the steps between them in
// whichever of two ways is shorter, named by a byte w:
//   - packed (w <= 32): the smallest step (uvarint), then each step less
//     the smallest in w bits (least significant first, the last byte
//     padded with zeros). A profiler sampling at a steady rate steps by
//     about its period, so its steps less the smallest take a few bits;
//   - uvarint steps (w = 255): where one long gap would widen every step
//     (a busy stream of many CPUs that pauses), each step as a uvarint.
//
// Rows stored before this encoding hold uvarint steps only, the first
// offset included (Second.VarintOffsets); every reader takes both.

// maxStepBits bounds w: a step is under a second, 2^30 ns.
const maxStepBits = 32

// varintSteps is the w of steps stored as uvarints.
const varintSteps = 255

// appendPacked appends the encoding of the sorted offsets us, packed or
// as uvarint steps, whichever is shorter.
func appendPacked(dst []byte, us []uint64) []byte {
	if len(us) == 0 {
		return dst
	}
	start := len(dst)
	dst = binary.AppendUvarint(dst, us[0])
	if len(us) == 1 {
		return dst
	}
	least, most, varints := us[1]-us[0], uint64(0), 0
	for i := 2; i < len(us); i++ {
		least = min(least, us[i]-us[i-1])
	}
	for i := 1; i < len(us); i++ {
		most = max(most, us[i]-us[i-1]-least)
		varints += uvarintLen(us[i] - us[i-1])
	}
	w := bits.Len64(most)
	if uvarintLen(least)+((len(us)-1)*w+7)/8 > varints {
		return appendSteps(dst[:start], us)
	}
	dst = binary.AppendUvarint(append(dst, byte(w)), least)
	var acc uint64 // bits not yet appended, the first at bit 0
	n := 0
	for i := 1; i < len(us); i++ {
		acc |= (us[i] - us[i-1] - least) << n
		for n += w; n >= 8; n -= 8 {
			dst = append(dst, byte(acc))
			acc >>= 8
		}
	}
	if n > 0 {
		dst = append(dst, byte(acc))
	}
	return dst
}

// appendSteps appends the offsets us with their steps as uvarints.
func appendSteps(dst []byte, us []uint64) []byte {
	dst = binary.AppendUvarint(dst, us[0])
	if len(us) == 1 {
		return dst
	}
	dst = append(dst, varintSteps)
	for i := 1; i < len(us); i++ {
		dst = binary.AppendUvarint(dst, us[i]-us[i-1])
	}
	return dst
}

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// offsets reads a row's offsets in order, in either encoding.
type offsets struct {
	b      []byte
	varint bool
	i      int32  // offsets read
	u      uint64 // the last one
	least  uint64
	w      uint
	acc    uint64 // bits read ahead, the next at bit 0
	n      uint   // how many
}

func offsetsOf(s *Second) offsets {
	return offsets{b: s.Offsets, varint: s.VarintOffsets}
}

// next returns the next offset; ok is false when the bytes are corrupt.
func (o *offsets) next() (u uint64, ok bool) {
	o.i++
	if o.varint || o.i == 1 {
		return o.nextStep()
	}
	if o.i == 2 {
		if len(o.b) == 0 {
			return 0, false
		}
		w := o.b[0]
		if w == varintSteps {
			o.varint, o.b = true, o.b[1:]
			return o.nextStep()
		}
		least, k := binary.Uvarint(o.b[1:])
		if k <= 0 || w > maxStepBits {
			return 0, false
		}
		o.least, o.w, o.b = least, uint(w), o.b[1+k:]
	}
	for o.n < o.w {
		if len(o.b) == 0 {
			return 0, false
		}
		o.acc |= uint64(o.b[0]) << o.n
		o.b, o.n = o.b[1:], o.n+8
	}
	step := o.acc&(1<<o.w-1) + o.least
	o.acc >>= o.w
	o.n -= o.w
	o.u += step
	return o.u, true
}

// nextStep reads the next offset as a uvarint step.
func (o *offsets) nextStep() (u uint64, ok bool) {
	d, k := binary.Uvarint(o.b)
	if k <= 0 {
		return 0, false
	}
	o.b, o.u = o.b[k:], o.u+d
	return o.u, true
}

// CanonicalOffsets returns a row's offsets as uvarint steps (the encoding
// of rows stored before packed offsets, which sample digests were taken
// of), whichever way the row holds them; ok is false for a corrupt row.
func CanonicalOffsets(s *Second) (b []byte, ok bool) {
	if s.VarintOffsets {
		return s.Offsets, true
	}
	o := offsetsOf(s)
	var prev uint64
	for range s.Samples {
		u, ok := o.next()
		if !ok {
			return nil, false
		}
		b = binary.AppendUvarint(b, u-prev)
		prev = u
	}
	return b, true
}
