package main

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
)

// adminCmd wraps the admin service: it manages the tenant of
// FLEETSCOPE_API_KEY (which needs the admin scope) through the server.
func adminCmd() *cobra.Command {
	a := &cobra.Command{Use: "admin", Short: "Manage your tenant through the server (a key with the admin scope)"}
	admin := func(c *cobra.Command) (fleetscopev1connect.AdminServiceClient, error) {
		cl, err := newClient()
		if err != nil {
			return nil, err
		}
		return cl.admin, nil
	}
	when := func(t *timestamppb.Timestamp) string {
		if t == nil {
			return "-"
		}
		return t.AsTime().Local().Format("2006-01-02 15:04:05")
	}
	table := func(header string, rows [][]string) error {
		w := bufio.NewWriter(os.Stdout)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, header)
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		tw.Flush()
		return w.Flush()
	}

	tenant := &cobra.Command{Use: "tenant", Short: "Your tenant: limits and usage", Args: args(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			ad, err := admin(c)
			if err != nil {
				return err
			}
			r, err := ad.GetTenant(c.Context(), connect.NewRequest(&fsv1.GetTenantRequest{}))
			if err != nil {
				return remoteErr(err)
			}
			m := r.Msg
			fmt.Printf("tenant %s, created %s\nprofiles %d, stored %d bytes (raw files and dictionary rows)\nretention %d days, per-sample rows %d days, max upload %d, max raw %d, max stored %d bytes, rate %d/s (0: none)\n",
				m.GetName(), when(m.GetCreatedAt()), m.GetProfiles(), m.GetStoredBytes(), m.GetRetentionDays(), m.GetSampleDays(),
				m.GetMaxUploadBytes(), m.GetMaxRawBytes(), m.GetMaxStoredBytes(), m.GetRatePerSecond())
			return nil
		}}

	keys := &cobra.Command{Use: "keys", Short: "List your tenant's keys", Args: args(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			ad, err := admin(c)
			if err != nil {
				return err
			}
			r, err := ad.ListKeys(c.Context(), connect.NewRequest(&fsv1.ListKeysRequest{}))
			if err != nil {
				return remoteErr(err)
			}
			var rows [][]string
			for _, k := range r.Msg.GetKeys() {
				rows = append(rows, []string{k.GetId(), k.GetName(), strings.Join(k.GetScopes(), ","), when(k.GetCreatedAt()), when(k.GetLastUsedAt()), when(k.GetExpiresAt()), when(k.GetRevokedAt())})
			}
			return table("ID\tNAME\tSCOPES\tCREATED\tLAST_USED\tEXPIRES\tREVOKED", rows)
		}}

	var scopes, name string
	var expires time.Duration
	newKey := &cobra.Command{Use: "create-key --scope ingest,read [--name N] [--expires-in D]", Short: "Create a key; prints only its secret", Args: args(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			ad, err := admin(c)
			if err != nil {
				return err
			}
			req := &fsv1.CreateKeyRequest{Name: name, Scopes: strings.Split(scopes, ",")}
			if expires > 0 {
				req.ExpiresAt = timestamppb.New(time.Now().Add(expires))
			}
			r, err := ad.CreateKey(c.Context(), connect.NewRequest(req))
			if err != nil {
				return remoteErr(err)
			}
			fmt.Println(r.Msg.GetSecret())
			return nil
		}}
	newKey.Flags().StringVar(&scopes, "scope", "read", "comma-separated scopes: ingest, read, admin")
	newKey.Flags().StringVar(&name, "name", "", "a name to recognise the key by")
	newKey.Flags().DurationVar(&expires, "expires-in", 0, "expire after this long (e.g. 720h); default never")

	one := func(use, short string, call func(c *cobra.Command, ad fleetscopev1connect.AdminServiceClient, id string) error) *cobra.Command {
		return &cobra.Command{Use: use, Short: short, Args: args(1, 1),
			RunE: func(c *cobra.Command, a []string) error {
				ad, err := admin(c)
				if err != nil {
					return err
				}
				return remoteErr(call(c, ad, a[0]))
			}}
	}
	revoke := one("revoke-key KEY_ID", "Revoke one of your keys", func(c *cobra.Command, ad fleetscopev1connect.AdminServiceClient, id string) error {
		_, err := ad.RevokeKey(c.Context(), connect.NewRequest(&fsv1.RevokeKeyRequest{Id: id}))
		return err
	})
	del := one("delete-profile PROFILE_ID", "Delete a profile: index rows and raw file", func(c *cobra.Command, ad fleetscopev1connect.AdminServiceClient, id string) error {
		_, err := ad.DeleteProfile(c.Context(), connect.NewRequest(&fsv1.DeleteProfileRequest{Id: id}))
		return err
	})
	unshare := one("unshare LINK_ID", "Revoke a share link (at once)", func(c *cobra.Command, ad fleetscopev1connect.AdminServiceClient, id string) error {
		_, err := ad.RevokeShareLink(c.Context(), connect.NewRequest(&fsv1.RevokeShareLinkRequest{Id: id}))
		return err
	})

	var newApp, newHost string
	var setLabels, removeLabels []string
	var replaceLabels bool
	update := &cobra.Command{
		Use:   "update-profile PROFILE_ID [--app A] [--host H] [--label k=v]... [--remove-label k]... [--replace-labels]",
		Short: "Change a profile's app, host or labels (what searches and fleets match); prints it as stored now",
		Long: `Change a stored profile's app, host or labels: what searches and fleet
selections match it by (its fleet aggregates move with it). Its samples never
change. --label adds or changes a label and keeps the others; --remove-label
removes one; --replace-labels makes the labels exactly the --label ones
(none: no labels). --host "" clears the host. Audited as profile.update.`,
		Args: args(1, 1),
		RunE: func(c *cobra.Command, a []string) error {
			set, err := parseLabels(setLabels)
			if err != nil {
				return err
			}
			req := &fsv1.UpdateProfileRequest{Id: a[0], SetLabels: set, RemoveLabels: removeLabels, ReplaceLabels: replaceLabels}
			if c.Flags().Changed("app") {
				req.App = &newApp
			}
			if c.Flags().Changed("host") {
				req.Host = &newHost
			}
			if req.App == nil && req.Host == nil && len(set) == 0 && len(removeLabels) == 0 && !replaceLabels {
				return usageError{fmt.Errorf("update-profile: nothing to change: give --app, --host, --label, --remove-label or --replace-labels")}
			}
			ad, err := admin(c)
			if err != nil {
				return err
			}
			r, err := ad.UpdateProfile(c.Context(), connect.NewRequest(req))
			if err != nil {
				return remoteErr(err)
			}
			p := r.Msg.GetProfile()
			fmt.Printf("%s app=%s host=%s labels=%s\n", p.GetId(), p.GetApp(), p.GetHost(), fleetscope.FormatLabels(p.GetLabels()))
			return nil
		}}
	update.Flags().StringVar(&newApp, "app", "", "the new app name")
	update.Flags().StringVar(&newHost, "host", "", `the new host ("" clears it)`)
	update.Flags().StringArrayVar(&setLabels, "label", nil, "add or change a label `key=value` (repeatable)")
	update.Flags().StringArrayVar(&removeLabels, "remove-label", nil, "remove the label with this `key` (repeatable)")
	update.Flags().BoolVar(&replaceLabels, "replace-labels", false, "the labels become exactly the --label ones")

	audit := &cobra.Command{Use: "audit", Short: "Your tenant's audit log, newest first", Args: args(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			ad, err := admin(c)
			if err != nil {
				return err
			}
			r, err := ad.ListAuditEvents(c.Context(), connect.NewRequest(&fsv1.ListAuditEventsRequest{PageSize: 200}))
			if err != nil {
				return remoteErr(err)
			}
			var rows [][]string
			for _, e := range r.Msg.GetEvents() {
				rows = append(rows, []string{when(e.GetAt()), e.GetActor(), e.GetAction(), e.GetTarget(), auditDetail(e.GetDetail())})
			}
			return table("AT\tACTOR\tACTION\tTARGET\tDETAIL", rows)
		}}

	var profile, start, end string
	var ttl time.Duration
	share := &cobra.Command{Use: "share --profile ID [--start S] [--end E] [--ttl D]", Short: "Create a share link to a profile range; prints its URL", Args: args(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			req := &fsv1.CreateShareLinkRequest{ProfileId: profile, TtlSeconds: int64(ttl / time.Second)}
			for _, b := range []struct {
				v   string
				dst **int64
			}{{start, &req.StartNanos}, {end, &req.EndNanos}} {
				if b.v == "" {
					continue
				}
				ns, err := fleetscope.ParseSeconds(b.v)
				if err != nil {
					return usageError{err}
				}
				*b.dst = &ns
			}
			ad, err := admin(c)
			if err != nil {
				return err
			}
			r, err := ad.CreateShareLink(c.Context(), connect.NewRequest(req))
			if err != nil {
				return remoteErr(err)
			}
			fmt.Printf("%s %s\n", r.Msg.GetLink().GetId(), r.Msg.GetUrl())
			return nil
		}}
	share.Flags().StringVar(&profile, "profile", "", "profile id")
	share.Flags().StringVar(&start, "start", "", "range start, seconds from the start second")
	share.Flags().StringVar(&end, "end", "", "range end (exclusive)")
	share.Flags().DurationVar(&ttl, "ttl", 0, "lifetime (default 7 days, at most 30)")

	shares := &cobra.Command{Use: "shares", Short: "List your share links", Args: args(0, 0),
		RunE: func(c *cobra.Command, _ []string) error {
			ad, err := admin(c)
			if err != nil {
				return err
			}
			r, err := ad.ListShareLinks(c.Context(), connect.NewRequest(&fsv1.ListShareLinksRequest{}))
			if err != nil {
				return remoteErr(err)
			}
			var rows [][]string
			for _, l := range r.Msg.GetLinks() {
				rows = append(rows, []string{l.GetId(), l.GetProfileId(), when(l.GetCreatedAt()), when(l.GetExpiresAt()), when(l.GetRevokedAt())})
			}
			return table("ID\tPROFILE\tCREATED\tEXPIRES\tREVOKED", rows)
		}}
	a.AddCommand(tenant, keys, newKey, revoke, del, update, audit, share, shares, unshare)
	return a
}

// auditDetail writes an audit event's detail as k=v pairs, keys sorted,
// values quoted when empty or holding spaces or quotes.
func auditDetail(d map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(d)) {
		v := d[k]
		if v == "" || strings.ContainsAny(v, " \"") {
			v = strconv.Quote(v)
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}
