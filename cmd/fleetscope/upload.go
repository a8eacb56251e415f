package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func uploadCmd() *cobra.Command {
	var (
		app, host, inputFormat string
		labels                 []string
	)
	c := &cobra.Command{
		Use:   "upload --app APP [--host H] [--label k=v]... (FILE | -)...",
		Short: "Upload profiles; prints one line per file: <profile-id> <permalink-url>",
		Long: `Upload profiles; prints one line per file on stdout: <profile-id>
<permalink-url>.

On stderr, for each file: where the profile sits in wall-clock time (UTC) and
which clock placed it, and, when the same bytes were already stored, that the
upload is a duplicate: the stored profile keeps its app, host and labels
(fleetscope admin update-profile changes them).

A FILE of - reads the profile from standard input.`,
		Example: `  fleetscope upload --app checkout --host web-7 --label env=prod perf.txt.gz
  fleetscope upload --app checkout host1.perf.txt host2.perf.txt
  perf script --header -i perf.data | fleetscope upload --app checkout -`,
		Args: args(1, 1<<20),
		RunE: func(c *cobra.Command, files []string) error {
			if app == "" {
				return usageError{errors.New("--app is required")}
			}
			lb, err := parseLabels(labels)
			if err != nil {
				return err
			}
			cl, err := newClient()
			if err != nil {
				return err
			}
			if n := len(slices.DeleteFunc(slices.Clone(files), func(f string) bool { return f != "-" })); n > 1 {
				return usageError{errors.New("- (standard input) can be read once")}
			}
			for _, path := range files {
				md := &fsv1.UploadMetadata{App: app, Host: host, Labels: lb, InputFormat: inputFormat, Filename: path}
				if path == "-" {
					md.Filename = "" // no name to keep
				}
				res, err := upload(c, cl, path, md)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				link := res.GetPermalink()
				if link == "" {
					link = cl.permalink(res.GetProfile().GetId())
				}
				fmt.Printf("%s %s\n", res.GetProfile().GetId(), link)
				fmt.Fprintf(os.Stderr, "%s: %s\n", path, placement(res.GetProfile(), time.Now()))
				if d := res.GetDuplicate(); d != nil {
					fmt.Fprintf(os.Stderr, "%s: %s\n", path, duplicateNote(d, res.GetProfile(), md))
				}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&app, "app", "", "application name (required)")
	f.StringVar(&host, "host", "", "host name (default: the hostname the profile records)")
	f.StringArrayVar(&labels, "label", nil, "label `key=value` (repeatable)")
	f.StringVar(&inputFormat, "input-format", "", "input format, instead of detecting it (perf)")
	setEnvironment(c, clientEnvHelp(" (ingest scope)"))
	return c
}

const uploadChunk = 1 << 20

// clocks says how each time source placed a profile in wall-clock time.
var clocks = map[string]string{
	"realtime": "the profile's own wall-clock timestamps",
	"anchored": "a boot clock placed by the upload's clock anchor",
	"upload":   "no wall clock in the profile: placed as ending at upload time",
	"span":     "no per-sample times: the span its profiler recorded",
}

// placement says where a stored profile sits in wall-clock time, in UTC,
// how long it lasts, which clock placed it and how long ago it ended, so
// that a profile recorded long ago (an epoch clock) is found by --since.
func placement(p *fsv1.Profile, now time.Time) string {
	// Times and duration to the millisecond, rounded, as profiles prints durations.
	start, end := p.GetStartTime().AsTime().UTC().Round(time.Millisecond), p.GetEndTime().AsTime().UTC().Round(time.Millisecond)
	const day, clock = "2006-01-02 ", "15:04:05.000"
	endFormat := clock
	if end.Format(day) != start.Format(day) {
		endFormat = day + clock
	}
	out := fmt.Sprintf("%s–%s UTC, %.3f s, clock %s", start.Format(day+clock), end.Format(endFormat),
		time.Duration(p.GetDurationNanos()).Round(time.Millisecond).Seconds(), p.GetTimeSource())
	if why := clocks[p.GetTimeSource()]; why != "" {
		out += " (" + why + ")"
	}
	switch ago := now.Sub(end); {
	case ago >= time.Minute:
		out += ", ended " + roughly(ago) + " ago"
	case ago <= -time.Minute:
		out += ", ends " + roughly(-ago) + " from now"
	}
	return out
}

// roughly writes a duration of a minute or more to the minute: "3 d 2 h",
// "5 h 07 min", "12 min".
func roughly(d time.Duration) string {
	m := int64(d / time.Minute)
	days, hours, mins := m/(24*60), m/60%24, m%60
	switch {
	case days > 0:
		return fmt.Sprintf("%d d %d h", days, hours)
	case hours > 0:
		return fmt.Sprintf("%d h %02d min", hours, mins)
	}
	return fmt.Sprintf("%d min", mins)
}

// duplicateNote reports an upload of bytes already stored: the profile's
// stored metadata, and if the upload asked for other metadata, that it was
// not applied and the command that would apply it.
func duplicateNote(d *fsv1.Duplicate, p *fsv1.Profile, md *fsv1.UploadMetadata) string {
	stored := fmt.Sprintf("app=%s, host=%s, labels %s", d.GetApp(), orNone(d.GetHost()), orNone(fleetscope.FormatLabels(d.GetLabels())))
	if len(d.GetIgnored()) == 0 {
		return fmt.Sprintf("duplicate of %s (stored as %s): already stored, nothing changed", d.GetProfileId(), stored)
	}
	cmd := []string{"fleetscope", "admin", "update-profile", d.GetProfileId()}
	for _, f := range d.GetIgnored() {
		switch f {
		case "app":
			cmd = append(cmd, "--app", shellQuote(md.GetApp()))
		case "host":
			host := md.GetHost()
			if host == "" {
				host = p.GetMeta()["hostname"]
			}
			cmd = append(cmd, "--host", shellQuote(host))
		case "labels":
			cmd = append(cmd, "--replace-labels")
			for _, k := range slices.Sorted(maps.Keys(md.GetLabels())) {
				cmd = append(cmd, "--label", shellQuote(k+"="+md.GetLabels()[k]))
			}
		}
	}
	return fmt.Sprintf("duplicate of %s (stored as %s): metadata not changed (this upload's %s ignored); to change it (admin key): %s",
		d.GetProfileId(), stored, strings.Join(d.GetIgnored(), ", "), strings.Join(cmd, " "))
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// shellQuote quotes s for a POSIX shell unless it needs no quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:/=@%+-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// upload sends the file at path, or standard input for "-".
func upload(c *cobra.Command, cl *client, path string, md *fsv1.UploadMetadata) (*fsv1.UploadResponse, error) {
	f := os.Stdin
	if path != "-" {
		var err error
		if f, err = os.Open(path); err != nil {
			return nil, err
		}
		defer f.Close()
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if !st.Mode().IsRegular() {
		size = 0 // a pipe: its size is not known
	}
	stream := cl.ingest.Upload(c.Context())
	if err := stream.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Metadata{Metadata: md}}); err != nil && !errors.Is(err, io.EOF) {
		return nil, remoteErr(err)
	}
	bar := newProgress(path, size)
	buf := make([]byte, uploadChunk)
	for {
		n, rerr := io.ReadFull(f, buf)
		if n > 0 {
			if err := stream.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Chunk{Chunk: buf[:n]}}); err != nil {
				break // the server ended the stream; CloseAndReceive says why
			}
			bar.add(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return nil, rerr
		}
	}
	res, err := stream.CloseAndReceive()
	bar.done()
	if err != nil {
		return nil, remoteErr(err)
	}
	return res.Msg, nil
}

// progress draws an upload progress bar on stderr when it is a terminal.
type progress struct {
	name       string
	total, n   int64
	tty        bool
	last       time.Time
	start      time.Time
	lastLength int
}

func newProgress(name string, total int64) *progress {
	return &progress{name: name, total: total, tty: term.IsTerminal(int(os.Stderr.Fd())), start: time.Now()}
}

func (p *progress) add(n int) {
	p.n += int64(n)
	if !p.tty || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	mbps := float64(p.n) / 1e6 / max(time.Since(p.start).Seconds(), 1e-3)
	line := fmt.Sprintf("\r%s %.1f MB %.0f MB/s", p.name, float64(p.n)/1e6, mbps) // a pipe: no total
	if p.total > 0 {
		pct := min(100*float64(p.n)/float64(p.total), 100)
		width := 30
		fill := int(pct / 100 * float64(width))
		line = fmt.Sprintf("\r%s [%s%s] %3.0f%% %.1f/%.1f MB %.0f MB/s", p.name,
			strings.Repeat("=", fill), strings.Repeat(" ", width-fill), pct, float64(p.n)/1e6, float64(p.total)/1e6, mbps)
	}
	p.lastLength = len(line)
	fmt.Fprint(os.Stderr, line)
}

func (p *progress) done() {
	if p.tty && p.lastLength > 0 {
		fmt.Fprintf(os.Stderr, "\r%s\r", strings.Repeat(" ", p.lastLength))
	}
}
