package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/cpuprofile"
	"github.com/fleetscope/fleetscope/ingest/folded"
	"github.com/fleetscope/fleetscope/ingest/nflx"
	"github.com/fleetscope/fleetscope/ingest/perf"
	"github.com/fleetscope/fleetscope/ingest/plugin"
	"github.com/fleetscope/fleetscope/ingest/pprof"
	"github.com/fleetscope/fleetscope/ingest/traceevent"
)

// Sink receives parsed samples in batches, in input order. Every id in a
// batch is already in p.Dict; the batch must not be kept.
type Sink func(p *fleetscope.Profile, batch []fleetscope.Sample) error

// ParseFunc parses a whole input, streaming samples to sink.
type ParseFunc func(r io.Reader, sink Sink) (*fleetscope.Profile, error)

// Format is one profiler's format: how to recognise it from its first bytes
// (already decompressed) and how to parse it into the profile model.
type Format struct {
	Name string
	// Detect returns a confidence from 0 (not this format) to 100 (certain)
	// that head, the first bytes of the input, is this format.
	Detect func(head []byte) int
	// Parse reads the whole input, streaming where the format allows.
	Parse ParseFunc
	// Configure, if set, returns a Parse for options given after the name
	// in an input format: "NAME:key=value,flag" (see Lookup).
	Configure func(opts map[string]string) (ParseFunc, error)
	// Plugin is the converter's path for a format an external plugin
	// provides (see package ingest/plugin).
	Plugin string
}

// HeadSize is how many leading bytes detection looks at.
const HeadSize = 64 << 10

// parser adapts a parser package's Parse to ParseFunc.
func parser(parse func(io.Reader, func(*fleetscope.Profile, []fleetscope.Sample) error) (*fleetscope.Profile, error)) ParseFunc {
	return func(r io.Reader, sink Sink) (*fleetscope.Profile, error) { return parse(r, sink) }
}

// formats are the built-in formats, most specific detection first (the
// order matters only for messages; ties are errors).
var formats = []Format{
	{Name: "perf", Detect: perf.Detect, Parse: parser(perf.Parse)},
	{Name: "nflxprofile", Detect: nflx.Detect, Parse: parser(nflx.Parse)},
	{Name: "cpuprofile", Detect: cpuprofile.Detect, Parse: parser(cpuprofile.Parse)},
	{Name: "traceevent", Detect: traceevent.Detect, Parse: parser(traceevent.Parse),
		Configure: func(kv map[string]string) (ParseFunc, error) {
			o, err := traceevent.ParseOptions(kv)
			return parser(o.Parse), err
		}},
	{Name: "pprof", Detect: pprof.Detect, Parse: parser(pprof.Parse)},
	{Name: "folded", Detect: folded.Detect, Parse: parser(folded.Parse),
		Configure: func(kv map[string]string) (ParseFunc, error) {
			o, err := folded.ParseOptions(kv)
			return parser(o.Parse), err
		}},
}

// Register adds a built-in format. Call it from an init function so the
// set is fixed before any parse.
func Register(f Format) { formats = append(formats, f) }

// available returns the built-in formats and the converter plugins found
// now (a plugin named like a built-in format is ignored), with the problem
// met looking for plugins, if any.
func available() ([]Format, error) {
	out := slices.Clone(formats)
	plugins, err := plugin.Discover()
	for _, pl := range plugins {
		if slices.ContainsFunc(formats, func(f Format) bool { return f.Name == pl.Name }) {
			continue
		}
		out = append(out, Format{Name: pl.Name, Detect: pl.Detect, Parse: parser(pl.Parse), Plugin: pl.Path})
	}
	return out, err
}

func names(fs []Format) []string {
	var out []string
	for _, f := range fs {
		n := f.Name
		if f.Plugin != "" {
			n += " (plugin)"
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Lookup finds a format by name. A name may carry options after a colon,
// "traceevent:pid=123,tid=456" or "folded:weighted", for formats that take
// them (see docs/formats.md). Returns EINVALID, listing the formats, for an
// unknown name, and for options the format does not take.
func Lookup(name string) (Format, error) {
	base, opts, hasOpts := strings.Cut(name, ":")
	fs, _ := available()
	i := slices.IndexFunc(fs, func(f Format) bool { return f.Name == base })
	if i < 0 {
		return Format{}, fleetscope.Errorf(fleetscope.EINVALID, "unknown input format %q (supported: %s)", base, strings.Join(names(fs), ", "))
	}
	f := fs[i]
	if !hasOpts {
		return f, nil
	}
	if f.Configure == nil {
		return Format{}, fleetscope.Errorf(fleetscope.EINVALID, "input format %s takes no options (%q)", base, opts)
	}
	kv := map[string]string{}
	for _, o := range strings.Split(opts, ",") {
		if o == "" {
			continue
		}
		k, v, _ := strings.Cut(o, "=")
		kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	parse, err := f.Configure(kv)
	if err != nil {
		return Format{}, err
	}
	f.Parse = parse
	return f, nil
}

// Detect picks the format head most likely is, asking every built-in
// format and every plugin found. Returns EINVALID, naming the formats tried,
// when none recognises head (for empty input too) or when the most
// confident are equally sure, and saying to run perf script for a perf.data
// file.
func Detect(head []byte) (Format, error) {
	fs, perr := available()
	if len(head) == 0 {
		return Format{}, fleetscope.Errorf(fleetscope.EINVALID, "empty input: not a profile (formats: %s)", strings.Join(names(fs), ", "))
	}
	if IsPerfData(head) {
		return Format{}, ErrPerfData
	}
	score, best := 0, []int(nil)
	for i, f := range fs {
		switch c := f.Detect(head); {
		case c > score:
			score, best = c, []int{i}
		case c == score && c > 0:
			best = append(best, i)
		}
	}
	switch {
	case len(best) == 0:
		msg := fmt.Sprintf("unrecognised input (%s): not any of %s; name the format with --input-format (input_format in the API)", describeHead(head), strings.Join(names(fs), ", "))
		if perr != nil {
			msg += "; plugins: " + perr.Error()
		}
		return Format{}, fleetscope.Errorf(fleetscope.EINVALID, "%s", msg)
	case len(best) > 1:
		var tied []string
		for _, i := range best {
			tied = append(tied, fs[i].Name)
		}
		return Format{}, fleetscope.Errorf(fleetscope.EINVALID, "ambiguous input: it looks equally like %s (confidence %d); name the format with --input-format (input_format in the API)", strings.Join(tied, " and "), score)
	}
	return fs[best[0]], nil
}

// ErrPerfData is Detect's error for a perf.data file.
var ErrPerfData = fleetscope.Errorf(fleetscope.EINVALID, "a perf.data file: fleetscope reads its text; run `perf script --header -i perf.data > perf.txt` on the machine that recorded it and give perf.txt (fleetscope agent --watch does this itself)")

// IsPerfData reports whether head is the start of a perf.data file (perf
// record's binary output).
func IsPerfData(head []byte) bool {
	return bytes.HasPrefix(head, []byte("PERFILE2")) || bytes.HasPrefix(head, []byte("PERFFILE"))
}

// describeHead says what head looks like, for an error message.
func describeHead(head []byte) string {
	sample := head[:min(len(head), 512)]
	if bytes.IndexByte(sample, 0) >= 0 {
		return "binary data"
	}
	line, _, _ := bytes.Cut(sample, []byte("\n"))
	line = bytes.TrimSpace(line)
	if len(line) > 60 {
		line = append(line[:60:60], "..."...)
	}
	return fmt.Sprintf("text starting %q", line)
}

// Parse decompresses r, detects its format by content (or uses
// inputFormat, if not empty; see Lookup) and parses it, streaming samples
// to sink. maxRaw, if positive, bounds the decompressed size (ETOOLARGE past
// it).
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
			if fleetscope.ErrorCode(err) != fleetscope.EINTERNAL {
				return nil, err
			}
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
