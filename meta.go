package fleetscope

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// CheckText returns EINVALID unless s is text the index can store and
// show: valid UTF-8 without NUL or other control characters.
func CheckText(what, s string) error {
	if !utf8.ValidString(s) {
		return Errorf(EINVALID, "%s %q is not valid UTF-8", what, s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return Errorf(EINVALID, "%s %q holds a control character (%U)", what, s, r)
		}
	}
	return nil
}

// CheckProfileMeta returns EINVALID unless app, host and labels can describe
// a profile: an app name (not empty), at most 200 bytes each for app and
// host, at most 64 labels (keys 1-100 bytes, values at most 200), all
// storable text. Uploads and metadata changes both obey it.
func CheckProfileMeta(app, host string, labels map[string]string) error {
	if app == "" {
		return Errorf(EINVALID, "a profile needs an app name")
	}
	if len(app) > 200 || len(host) > 200 || len(labels) > 64 {
		return Errorf(EINVALID, "app, host or labels too long (app and host at most 200 bytes, at most 64 labels)")
	}
	for what, v := range map[string]string{"app": app, "host": host} {
		if err := CheckText(what, v); err != nil {
			return err
		}
	}
	for k, v := range labels {
		if k == "" || len(k) > 100 || len(v) > 200 {
			return Errorf(EINVALID, "label %q: keys 1-100 bytes, values at most 200", k)
		}
		if err := CheckText("label", k); err != nil {
			return err
		}
		if err := CheckText("label "+k+" value", v); err != nil {
			return err
		}
	}
	return nil
}

// ProfileUpdate changes a stored profile's metadata: what identifies it in
// searches and fleets (app, host, labels). Nothing else of a stored profile
// changes.
type ProfileUpdate struct {
	App  *string // nil: unchanged
	Host *string // nil: unchanged; "" clears it
	// SetLabels adds or changes labels; RemoveLabels removes keys (absent
	// ones are ignored). With ReplaceLabels the labels become exactly
	// SetLabels (RemoveLabels must then be empty).
	SetLabels     map[string]string
	RemoveLabels  []string
	ReplaceLabels bool
}

// Empty reports whether u asks for no change at all.
func (u ProfileUpdate) Empty() bool {
	return u.App == nil && u.Host == nil && len(u.SetLabels) == 0 && len(u.RemoveLabels) == 0 && !u.ReplaceLabels
}

// Apply returns p's metadata with u applied, checked as an upload's would
// be (CheckProfileMeta). Returns EINVALID if u asks for nothing, removes and
// replaces labels at once, or leads to metadata no upload could give.
func (u ProfileUpdate) Apply(app, host string, labels map[string]string) (string, string, map[string]string, error) {
	if u.Empty() {
		return "", "", nil, Errorf(EINVALID, "nothing to change: give a new app, host or labels")
	}
	if u.ReplaceLabels && len(u.RemoveLabels) > 0 {
		return "", "", nil, Errorf(EINVALID, "replacing the labels and removing some at once: give only the labels to keep")
	}
	if u.App != nil {
		app = strings.TrimSpace(*u.App)
	}
	if u.Host != nil {
		host = *u.Host
	}
	out := maps.Clone(labels)
	if u.ReplaceLabels || out == nil {
		out = map[string]string{}
	}
	for _, k := range u.RemoveLabels {
		delete(out, k)
	}
	maps.Copy(out, u.SetLabels)
	if err := CheckProfileMeta(app, host, out); err != nil {
		return "", "", nil, err
	}
	return app, host, out, nil
}

// FormatLabels writes labels as "k=v,k2=v2", keys sorted ("" for none).
func FormatLabels(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}
