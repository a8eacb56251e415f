package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/store/memory"
)

// Local files are parsed and indexed exactly as an upload is (ingest), kept
// in memory (store/memory) and queried through the query service, so a
// local file and the server give the same answer by construction.

// localProfile is a profile file served by a query service of its own.
type localProfile struct {
	q  *query.Service
	id string
}

// openLocal parses FILE, or standard input for "-" or no argument.
func openLocal(a []string, inputFormat string) (*localProfile, error) {
	if inputFormat != "" {
		if _, err := ingest.Lookup(inputFormat); err != nil {
			return nil, usageError{err}
		}
	}
	r, done, err := openRaw(a)
	if err != nil {
		return nil, err
	}
	defer done()
	return newLocal(r, inputFormat)
}

// newLocal parses a profile (any format, compressed or not) from r.
func newLocal(r io.Reader, inputFormat string) (*localProfile, error) {
	batch()
	parsed, err := ingest.ParseIndex(r, inputFormat, 0, ingest.Shape{})
	if err != nil {
		return nil, err
	}
	warn(parsed.Profile)
	info := ingest.Describe(ingest.Meta{}, parsed, time.Now())
	st := memory.New()
	id, err := st.Add(info, parsed.Profile.Dict, parsed.Index)
	if err != nil {
		return nil, err
	}
	return &localProfile{q: query.New(st, query.Options{}), id: id}, nil
}

// openRaw opens FILE, or standard input for "-" or no argument.
func openRaw(a []string) (io.Reader, func(), error) {
	if len(a) == 0 || a[0] == "-" {
		return os.Stdin, func() {}, nil
	}
	f, err := os.Open(a[0])
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// openInput opens FILE, or standard input for "-" or no argument, with
// compression undone by content.
func openInput(a []string) (io.Reader, func(), error) {
	r, done, err := openRaw(a)
	if err != nil {
		return nil, nil, err
	}
	d, err := ingest.Decompress(r)
	if err != nil {
		done()
		return nil, nil, fmt.Errorf("%s: %w", inputName(a), err)
	}
	return d, done, nil
}

func inputName(a []string) string {
	if len(a) == 0 || a[0] == "-" {
		return "standard input"
	}
	return a[0]
}

func warn(p *fleetscope.Profile) {
	for _, w := range p.Warnings {
		fmt.Fprintf(os.Stderr, "fleetscope: warning: %s\n", w)
	}
}

// fileOrProfile checks that exactly one of FILE and --profile was given.
func fileOrProfile(a []string, profile string) error {
	if (len(a) == 1) == (profile != "") {
		return usageError{fmt.Errorf("give either FILE or --profile ID")}
	}
	return nil
}

// parseSamples parses FILE keeping every sample with all its fields.
func parseSamples(a []string, inputFormat string) (*fleetscope.Profile, []fleetscope.Sample, error) {
	if inputFormat != "" {
		if _, err := ingest.Lookup(inputFormat); err != nil {
			return nil, nil, usageError{err}
		}
	}
	r, done, err := openRaw(a)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	var samples []fleetscope.Sample
	p, err := ingest.Parse(r, inputFormat, 0, func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
		samples = append(samples, batch...)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	warn(p)
	return p, samples, nil
}
