package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/query/flame"
	"github.com/fleetscope/fleetscope/query/heatmap"
)

func parseLabels(kv []string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range kv {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usageError{fmt.Errorf("--label %q: want key=value", s)}
		}
		out[k] = v
	}
	return out, nil
}

func uploadCmd() *cobra.Command {
	var (
		app, host, inputFormat string
		labels                 []string
	)
	c := &cobra.Command{
		Use:   "upload --app APP [--host H] [--label k=v]... FILE...",
		Short: "Upload profiles; prints one line per file: <profile-id> <permalink-url>",
		Args:  args(1, 1<<20),
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
			for _, path := range files {
				md := &fsv1.UploadMetadata{App: app, Host: host, Labels: lb, InputFormat: inputFormat, Filename: path}
				res, err := upload(c, cl, path, md)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				link := res.GetPermalink()
				if link == "" {
					link = cl.permalink(res.GetProfile().GetId())
				}
				fmt.Printf("%s %s\n", res.GetProfile().GetId(), link)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&app, "app", "", "application name (required)")
	f.StringVar(&host, "host", "", "host name (default: the hostname the profile records)")
	f.StringArrayVar(&labels, "label", nil, "label key=value (repeatable)")
	f.StringVar(&inputFormat, "input-format", "", "input format, instead of detecting it (perf)")
	return c
}

const uploadChunk = 1 << 20

func upload(c *cobra.Command, cl *client, path string, md *fsv1.UploadMetadata) (*fsv1.UploadResponse, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	stream := cl.ingest.Upload(c.Context())
	if err := stream.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Metadata{Metadata: md}}); err != nil && !errors.Is(err, io.EOF) {
		return nil, remoteErr(err)
	}
	bar := newProgress(path, st.Size())
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
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(p.n) / float64(p.total)
	}
	width := 30
	fill := int(pct / 100 * float64(width))
	mbps := float64(p.n) / 1e6 / max(time.Since(p.start).Seconds(), 1e-3)
	line := fmt.Sprintf("\r%s [%s%s] %3.0f%% %.1f/%.1f MB %.0f MB/s", p.name,
		strings.Repeat("=", fill), strings.Repeat(" ", width-fill), pct, float64(p.n)/1e6, float64(p.total)/1e6, mbps)
	p.lastLength = len(line)
	fmt.Fprint(os.Stderr, line)
}

func (p *progress) done() {
	if p.tty && p.lastLength > 0 {
		fmt.Fprintf(os.Stderr, "\r%s\r", strings.Repeat(" ", p.lastLength))
	}
}

func profilesCmd() *cobra.Command {
	var (
		app, host, since, until string
		labels                  []string
		asJSON                  bool
		limit                   int
	)
	c := &cobra.Command{
		Use:   "profiles [--app A] [--host H] [--label k=v] [--since T] [--until T] [--json]",
		Short: "Search profiles (newest first); T is RFC 3339, a date, or a duration ago like 2h",
		Args:  args(0, 0),
		RunE: func(c *cobra.Command, a []string) error {
			lb, err := parseLabels(labels)
			if err != nil {
				return err
			}
			req := &fsv1.SearchProfilesRequest{App: app, Host: host, Labels: lb, PageSize: int32(min(limit, 1000))}
			for _, t := range []struct {
				flag, v string
				dst     **timestamppb.Timestamp
			}{{"--since", since, &req.Since}, {"--until", until, &req.Until}} {
				if t.v == "" {
					continue
				}
				tm, err := parseWhen(t.v)
				if err != nil {
					return usageError{fmt.Errorf("%s: %w", t.flag, err)}
				}
				*t.dst = timestamppb.New(tm)
			}
			cl, err := newClient()
			if err != nil {
				return err
			}
			var all []*fsv1.Profile
			for len(all) < limit {
				res, err := cl.query.SearchProfiles(c.Context(), connect.NewRequest(req))
				if err != nil {
					return remoteErr(err)
				}
				all = append(all, res.Msg.GetProfiles()...)
				if req.PageToken = res.Msg.GetNextPageToken(); req.PageToken == "" {
					break
				}
			}
			if len(all) > limit {
				all = all[:limit]
			}
			w := bufio.NewWriter(os.Stdout)
			defer w.Flush()
			if asJSON {
				w.WriteString("[")
				for i, p := range all {
					if i > 0 {
						w.WriteString(",")
					}
					b, _ := protojson.Marshal(p)
					w.Write(b)
				}
				w.WriteString("]\n")
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAPP\tHOST\tSTART\tDURATION\tSAMPLES\tEVENTS\tLABELS")
			for _, p := range all {
				var evs, lbs []string
				for _, e := range p.GetEvents() {
					evs = append(evs, e.GetName())
				}
				for k, v := range p.GetLabels() {
					lbs = append(lbs, k+"="+v)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", p.GetId(), p.GetApp(), p.GetHost(),
					p.GetStartTime().AsTime().Local().Format("2006-01-02 15:04:05"),
					time.Duration(p.GetDurationNanos()).Round(time.Millisecond), p.GetSamples(),
					strings.Join(evs, ","), strings.Join(lbs, ","))
			}
			return tw.Flush()
		},
	}
	f := c.Flags()
	f.StringVar(&app, "app", "", "application")
	f.StringVar(&host, "host", "", "host")
	f.StringArrayVar(&labels, "label", nil, "label key=value (repeatable; all must match)")
	f.StringVar(&since, "since", "", "profiles that end at or after T")
	f.StringVar(&until, "until", "", "profiles that start before T")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.IntVar(&limit, "limit", 100, "at most this many profiles")
	return c
}

// parseWhen reads RFC 3339, a date (YYYY-MM-DD, UTC) or a duration ago.
func parseWhen(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q: want RFC 3339, YYYY-MM-DD or a duration like 2h", s)
}

// remoteHeatmap fetches a stored profile's heatmap in the local command's form.
func remoteHeatmap(c *cobra.Command, id, event string, rows int, idle bool) (*heatmap.Heatmap, error) {
	cl, err := newClient()
	if err != nil {
		return nil, err
	}
	res, err := cl.query.GetHeatmap(c.Context(), connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id, Event: event, Rows: int32(rows), IncludeIdle: idle}))
	if err != nil {
		return nil, remoteErr(err)
	}
	m := res.Msg
	h := &heatmap.Heatmap{Event: m.GetEvent(), StartSecond: m.GetStartSecond(), Rows: int(m.GetRows()), MaxCount: m.GetMaxCount(), Total: m.GetTotal()}
	for _, col := range m.GetColumns() {
		h.Columns = append(h.Columns, append([]int64{}, col.GetCounts()...))
	}
	return h, nil
}

// remoteFlame fetches a stored profile's flame graph and writes it as the
// local command would.
func remoteFlame(c *cobra.Command, w io.Writer, req *fsv1.GetFlameGraphRequest, format string) error {
	cl, err := newClient()
	if err != nil {
		return err
	}
	req.Format = fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED
	if format == "json" {
		req.Format = fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_TREE
	}
	res, err := cl.query.GetFlameGraph(c.Context(), connect.NewRequest(req))
	if err != nil {
		return remoteErr(err)
	}
	if format == "json" {
		t := res.Msg.GetTree()
		flat := &flame.Flat{Names: t.GetNames(), Name: t.GetName(), Value: t.GetValue(), Depth: t.GetDepth()}
		if err := flat.Check(); err != nil {
			return fmt.Errorf("server sent a malformed flame graph: %w", err)
		}
		return flame.WriteJSON(w, flat.Tree())
	}
	_, err = io.WriteString(w, res.Msg.GetFolded())
	return err
}
