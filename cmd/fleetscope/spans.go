package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/query/spans"
	"github.com/spf13/cobra"
)

// spansJSON is what spans --json prints: the keys the CLI contract fixes,
// then details.
type spansJSON struct {
	Spans            int     `json:"spans"`
	Unmatched        int     `json:"unmatched"`
	P50Micros        float64 `json:"p50Micros"`
	P90Micros        float64 `json:"p90Micros"`
	P95Micros        float64 `json:"p95Micros"`
	P99Micros        float64 `json:"p99Micros"`
	MaxMicros        float64 `json:"maxMicros"`
	UnmatchedEntries int     `json:"unmatchedEntries"`
	UnmatchedReturns int     `json:"unmatchedReturns"`
	Threads          int     `json:"threads"`
	Entry            string  `json:"entry"`
	Return           string  `json:"return"`
}

func spansCmd() *cobra.Command {
	var (
		entry, ret  string
		inputFormat string
		asJSON      bool
		profile     string
	)
	c := &cobra.Command{
		Use:   "spans [--entry EVENT --return EVENT] [--input-format NAME] [--json] (FILE | --profile ID)",
		Short: "Pair entry and return probe events (perf's F and F__return uprobes) into spans per thread and print their latency",
		Long: `Pairs entry and return probe events into spans per thread and prints how
many there are, how many probe events could not be paired, and the latency
percentiles p50, p90, p95 and p99 (the lower value at (n-1)·p/100 of the
sorted durations). The pair is found by perf's uprobe naming (F and
F__return) unless --entry and --return name it; one of them is enough when
the other follows that naming.`,
		Args: args(0, 1),
		RunE: func(c *cobra.Command, a []string) error {
			if err := fileOrProfile(a, profile); err != nil {
				return err
			}
			var sum spansJSON
			var buckets []spans.Bucket
			if profile != "" {
				var err error
				if sum, buckets, err = remoteSpans(c, profile, entry, ret); err != nil {
					return err
				}
			} else {
				// The pair is known only once every event name has been
				// seen: keep the samples until then.
				prof, samples, err := parseSamples(a, inputFormat)
				if err != nil {
					return err
				}
				pair, err := spans.FindPair(prof.Dict.Events(), entry, ret)
				if err != nil {
					return err
				}
				set := spans.Match(samples, pair, prof.Dict)
				sum, buckets = spansSummary(set), set.Histogram()
			}
			if sum.Spans == 0 {
				fmt.Fprintf(os.Stderr, "fleetscope: warning: no %s event was paired with a %s event: no latency (percentiles print as 0)\n", sum.Entry, sum.Return)
			}
			w := bufio.NewWriter(os.Stdout)
			var err error
			if asJSON {
				err = json.NewEncoder(w).Encode(sum)
			} else {
				renderSpans(w, sum, buckets)
			}
			if err != nil {
				return err
			}
			return w.Flush()
		},
	}
	f := c.Flags()
	f.StringVar(&entry, "entry", "", "the entry event (default: found by perf's F / F__return naming)")
	f.StringVar(&ret, "return", "", "the return event (default: found by perf's F / F__return naming)")
	f.StringVar(&inputFormat, "input-format", "", "input format, instead of detecting it by content")
	f.BoolVar(&asJSON, "json", false, `print {"spans","unmatched","p50Micros","p90Micros","p95Micros","p99Micros",...} as JSON`)
	f.StringVar(&profile, "profile", "", "a stored profile's id: ask the server (FLEETSCOPE_URL, FLEETSCOPE_API_KEY)")
	return c
}

// remoteSpans asks the server for a stored profile's spans.
func remoteSpans(c *cobra.Command, id, entry, ret string) (spansJSON, []spans.Bucket, error) {
	cl, err := newClient()
	if err != nil {
		return spansJSON{}, nil, err
	}
	res, err := cl.query.GetSpans(c.Context(), connect.NewRequest(&fsv1.GetSpansRequest{ProfileId: id, Entry: entry, Return: ret}))
	if err != nil {
		return spansJSON{}, nil, remoteErr(err)
	}
	m := res.Msg
	sum := spansJSON{Spans: int(m.GetSpans()), Unmatched: int(m.GetUnmatchedEntries() + m.GetUnmatchedReturns()),
		P50Micros: micros(m.GetP50Nanos()), P90Micros: micros(m.GetP90Nanos()), P95Micros: micros(m.GetP95Nanos()), P99Micros: micros(m.GetP99Nanos()),
		MaxMicros: micros(m.GetMaxNanos()), UnmatchedEntries: int(m.GetUnmatchedEntries()), UnmatchedReturns: int(m.GetUnmatchedReturns()),
		Threads: int(m.GetThreads()), Entry: m.GetEntry(), Return: m.GetReturn()}
	var buckets []spans.Bucket
	for _, b := range m.GetHistogram() {
		buckets = append(buckets, spans.Bucket{LoNanos: b.GetLoNanos(), HiNanos: b.GetHiNanos(), Count: int(b.GetCount())})
	}
	return sum, buckets, nil
}

func spansSummary(set *spans.Set) spansJSON {
	l := set.Latency()
	return spansJSON{
		Spans:            len(set.Spans),
		Unmatched:        set.Unmatched(),
		P50Micros:        micros(l.P50),
		P90Micros:        micros(l.P90),
		P95Micros:        micros(l.P95),
		P99Micros:        micros(l.P99),
		MaxMicros:        micros(set.MaxNanos()),
		UnmatchedEntries: set.UnmatchedEntries,
		UnmatchedReturns: set.UnmatchedReturns,
		Threads:          set.Threads(),
		Entry:            set.Pair.EntryName,
		Return:           set.Pair.ReturnName,
	}
}

func micros(ns int64) float64 { return float64(ns) / 1e3 }

// renderSpans prints a short summary: counts, percentiles and a latency
// histogram with power-of-two buckets.
func renderSpans(w io.Writer, s spansJSON, buckets []spans.Bucket) {
	fmt.Fprintf(w, "%d spans from %s to %s on %d %s\n", s.Spans, s.Entry, s.Return, s.Threads, plural(s.Threads, "thread", "threads"))
	fmt.Fprintf(w, "%d unmatched: %d %s never returned, %d %s without an entry\n",
		s.Unmatched, s.UnmatchedEntries, plural(s.UnmatchedEntries, "entry", "entries"), s.UnmatchedReturns, plural(s.UnmatchedReturns, "return", "returns"))
	if s.Spans == 0 {
		return
	}
	fmt.Fprintf(w, "latency: p50 %s µs, p90 %s µs, p95 %s µs, p99 %s µs, max %s µs\n\n",
		fmtMicros(s.P50Micros), fmtMicros(s.P90Micros), fmtMicros(s.P95Micros), fmtMicros(s.P99Micros), fmtMicros(s.MaxMicros))
	const width = 40
	most := 0
	for _, b := range buckets {
		most = max(most, b.Count)
	}
	for _, b := range buckets {
		bar := (b.Count*width + most - 1) / most // a non-empty bucket shows at least one mark
		fmt.Fprintf(w, "%8s .. %-8s |%-*s %d\n", fmtDuration(b.LoNanos), fmtDuration(b.HiNanos), width, strings.Repeat("#", bar), b.Count)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// fmtMicros prints µs without a needless fraction.
func fmtMicros(us float64) string { return strconv.FormatFloat(us, 'f', -1, 64) }

// fmtDuration prints a histogram bound compactly: 512µs, 1.02ms, 2.1s.
func fmtDuration(ns int64) string {
	switch {
	case ns < 1e6:
		return fmtMicros(micros(ns)) + "µs"
	case ns < 1e9:
		return strconv.FormatFloat(float64(ns)/1e6, 'g', 3, 64) + "ms"
	}
	return strconv.FormatFloat(float64(ns)/1e9, 'g', 3, 64) + "s"
}
