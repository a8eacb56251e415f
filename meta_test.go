package fleetscope

import (
	"maps"
	"testing"
)

// TestProfileUpdateApply: what each change makes of a profile's metadata,
// and the changes refused.
func TestProfileUpdateApply(t *testing.T) {
	s := func(v string) *string { return &v }
	labels := map[string]string{"env": "prod", "team": "a"}
	for _, c := range []struct {
		name      string
		u         ProfileUpdate
		app, host string
		labels    map[string]string
		wantErr   bool
	}{
		{"app", ProfileUpdate{App: s(" billing ")}, "billing", "web-1", labels, false},
		{"host", ProfileUpdate{Host: s("web-2")}, "checkout", "web-2", labels, false},
		{"clear host", ProfileUpdate{Host: s("")}, "checkout", "", labels, false},
		{"set and remove", ProfileUpdate{SetLabels: map[string]string{"env": "staging", "tier": "1"}, RemoveLabels: []string{"team", "absent"}},
			"checkout", "web-1", map[string]string{"env": "staging", "tier": "1"}, false},
		{"replace", ProfileUpdate{SetLabels: map[string]string{"tier": "1"}, ReplaceLabels: true}, "checkout", "web-1", map[string]string{"tier": "1"}, false},
		{"replace with none", ProfileUpdate{ReplaceLabels: true}, "checkout", "web-1", map[string]string{}, false},
		{"nothing", ProfileUpdate{}, "", "", nil, true},
		{"empty app", ProfileUpdate{App: s("  ")}, "", "", nil, true},
		{"control character", ProfileUpdate{Host: s("a\nb")}, "", "", nil, true},
		{"empty label key", ProfileUpdate{SetLabels: map[string]string{"": "x"}}, "", "", nil, true},
		{"replace and remove", ProfileUpdate{ReplaceLabels: true, RemoveLabels: []string{"env"}}, "", "", nil, true},
	} {
		app, host, got, err := c.u.Apply("checkout", "web-1", labels)
		if (err != nil) != c.wantErr {
			t.Errorf("%s: error %v, want one: %v", c.name, err, c.wantErr)
			continue
		}
		if err != nil {
			if ErrorCode(err) != EINVALID {
				t.Errorf("%s: %v, want EINVALID", c.name, err)
			}
			continue
		}
		if app != c.app || host != c.host || !maps.Equal(got, c.labels) {
			t.Errorf("%s: %q %q %v, want %q %q %v", c.name, app, host, got, c.app, c.host, c.labels)
		}
	}
	if labels["team"] != "a" || len(labels) != 2 {
		t.Fatalf("Apply changed the labels it was given: %v", labels)
	}
	if got := FormatLabels(map[string]string{"team": "a", "env": "prod"}); got != "env=prod,team=a" {
		t.Fatalf("FormatLabels: %q", got)
	}
}
