package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"
)

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
	f.StringArrayVar(&labels, "label", nil, "label `key=value` (repeatable; all must match)")
	f.StringVar(&since, "since", "", "profiles that end at or after T")
	f.StringVar(&until, "until", "", "profiles that start before T")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.IntVar(&limit, "limit", 100, "at most this many profiles")
	setEnvironment(c, clientEnvHelp(" (read scope)"))
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
