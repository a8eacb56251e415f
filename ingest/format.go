package ingest

import (
	"bufio"
	"io"
	"slices"
	"strings"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/perf"
)

// Sink receives parsed samples in batches, in input order. Every id in a
// batch is already in p.Dict; the batch must not be kept.
type Sink func(p *fleetscope.Profile, batch []fleetscope.Sample) error

// Format is one profiler's format: how to recognise it from its first bytes
// (already decompressed) and how to parse it into the profile model.
type Format struct {
	Name string
	// Detect returns a confidence from 0 (not this format) to 100 (certain)
	// that head, the first bytes of the input, is this format.
	Detect func(head []byte) int
	// Parse reads the whole input, streaming where the format allows.
	Parse func(r io.Reader, sink Sink) (*fleetscope.Profile, error)
}

// HeadSize is how many leading bytes detection looks at.
const HeadSize = 64 << 10

var formats = []Format{
	{Name: "perf", Detect: perf.Detect, Parse: func(r io.Reader, sink Sink) (*fleetscope.Profile, error) { return perf.Parse(r, sink) }},
}

// Register adds a format. Formats register from this package's init (see
// formats.go) so the set is fixed before any parse.
func Register(f Format) { formats = append(formats, f) }

// FormatNames lists the registered formats.
func FormatNames() []string {
	var out []string
	for _, f := range formats {
		out = append(out, f.Name)
	}
	slices.Sort(out)
	return out
}

// Lookup finds a format by name.
func Lookup(name string) (Format, error) {
	for _, f := range formats {
		if f.Name == name {
			return f, nil
		}
	}
	return Format{}, fleetscope.Errorf(fleetscope.EINVALID, "unknown input format %q (supported: %s)", name, strings.Join(FormatNames(), ", "))
}

// Detect picks the format head most likely is. Returns EINVALID, naming the
// formats tried, when none recognises it or two are equally sure.
func Detect(head []byte) (Format, error) {
	if len(head) == 0 {
		return Format{}, fleetscope.Errorf(fleetscope.EINVALID, "empty input: not a profile")
	}
	best, score, tie := -1, 0, false
	for i, f := range formats {
		c := f.Detect(head)
		switch {
		case c > score:
			best, score, tie = i, c, false
		case c == score && c > 0:
			tie = true
		}
	}
	if best < 0 {
		return Format{}, fleetscope.Errorf(fleetscope.EINVALID, "unrecognised input: not any of %s (use --input-format to say which)", strings.Join(FormatNames(), ", "))
	}
	if tie {
		return Format{}, fleetscope.Errorf(fleetscope.EINVALID, "ambiguous input: more than one format fits equally (use --input-format to say which)")
	}
	return formats[best], nil
}

// Parse decompresses r, detects its format by content (or uses
// inputFormat, if not empty) and parses it, streaming samples to sink.
// maxRaw, if positive, bounds the decompressed size (ETOOLARGE past it).
func Parse(r io.Reader, inputFormat string, maxRaw int64, sink Sink) (*fleetscope.Profile, error) {
	dr, err := Decompress(r)
	if err != nil {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "%v", err)
	}
	if maxRaw > 0 {
		dr = &limited{r: dr, left: maxRaw, limit: maxRaw, what: "decompressed input"}
	}
	br := bufio.NewReaderSize(dr, HeadSize)
	var f Format
	if inputFormat != "" {
		if f, err = Lookup(inputFormat); err != nil {
			return nil, err
		}
	} else {
		head, err := br.Peek(HeadSize)
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "reading the input: %v", err)
		}
		if f, err = Detect(head); err != nil {
			return nil, err
		}
	}
	p, err := f.Parse(br, sink)
	if err != nil {
		return p, err
	}
	if p.Format == "" {
		p.Format = f.Name
	}
	return p, nil
}

