// Package fleetscope is the domain of the fleetscope profiling service. It
// owns:
//
//   - the profile model: samples, threads, a deduplicated frame and stack
//     dictionary with its idle rule, events and the default-event rule
//     (profile.go, event.go), and profile metadata with its checks and
//     updates (meta.go);
//   - time: ranges, seconds as text, the accepted timestamps (range.go,
//     geometry.go);
//   - the heatmap's geometry: rows, columns, the row of an offset, the
//     seconds a column covers (geometry.go);
//   - sample selection: Selection (an event, a range, idle or not) and the
//     filters by thread, function and probe span, compiled to a Matcher
//     over a dictionary (event.go, filter.go);
//   - fleet selections: label matchers, label sets, the window a fleet
//     query may cover and a profile's span in wall-clock time (fleet.go);
//   - the records the stores keep and the API shows: profiles, tenants and
//     their limits, keys and principals, share links, live streams, audit
//     events (fleetscope.go);
//   - the one error type with its codes (error.go) and the context check
//     long loops make (ctxcheck.go).
//
// It imports nothing of the project; every other package builds on it.
//
// Data flows one way: api → ingest → store → query → web.
package fleetscope

import "time"

// ProfileInfo is what the index knows of a stored profile.
type ProfileInfo struct {
	ID            string
	App           string
	Host          string
	Labels        map[string]string
	Format        string
	Filename      string
	Events        []EventInfo
	DefaultEvent  int
	Samples       int64
	Timed         bool      // false when the profiler recorded no per-sample times
	StartSecond   int64     // floor(first timestamp), profile clock, seconds
	DurationNanos int64     // from StartSecond to the last sample
	TimeUnitNanos int64     // unit of the stored offsets: ns per unit, or -m for 2^-m s (store/index/unit.go)
	StartTime     time.Time // StartSecond in absolute time
	EndTime       time.Time
	// WallShiftNanos places the profile in absolute time: a sample at t
	// on the profile's clock happened at t + WallShiftNanos unix ns (0 for
	// epoch clocks; exact for anchored profiles, where StartTime is
	// rounded to microseconds).
	WallShiftNanos int64
	TimeSource     string // "realtime", "anchored", "upload" or "span"
	SizeBytes      int64
	SHA256         string // hex, of the bytes as uploaded
	BlobKey        string
	Meta           map[string]string
	CreatedAt      time.Time
	// Cold: the profile's per-sample rows were moved out of the index
	// (the tenant's sample tier); its samples are read from its raw file,
	// and used only if they hash to SamplesDigest (index.Digest of the
	// rows that were moved).
	Cold          bool
	SamplesDigest []byte
}

// EventInfo describes one event of a stored profile.
type EventInfo struct {
	Name    string `json:"name"`
	Samples int64  `json:"samples"` // records stored
	Period  uint64 `json:"period"`
	// Weighted: the records are pre-aggregated (pprof values); each counts
	// as its period, its value, in flame graphs and heatmaps.
	Weighted bool `json:"weighted,omitempty"`
}

// Scopes an API key may hold.
const (
	ScopeIngest = "ingest"
	ScopeRead   = "read"
	ScopeAdmin  = "admin"
)

// Principal is who a request acts for: a tenant, through one of its keys.
type Principal struct {
	TenantID int64
	Tenant   string
	KeyID    string
	Scopes   []string
	Limits   Limits
	// ExpiresAt is when the key stops working; zero: never. Nothing may
	// trust a resolved key past it.
	ExpiresAt time.Time
}

// Can reports whether the principal holds scope.
func (p Principal) Can(scope string) bool {
	for _, s := range p.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// Limits are a tenant's quotas; zero means none of its own (the server's
// limits still apply).
type Limits struct {
	RetentionDays int
	// SampleDays is how long the per-sample rows stay in the index; past
	// it a profile's samples are read from its raw file (Cold). Read by
	// the sweeper, not on the request path (Principal.Limits leaves it 0).
	SampleDays     int
	MaxUploadBytes int64
	MaxRawBytes    int64
	MaxStoredBytes int64
	RatePerSecond  int
	MaxStacks      int // distinct stacks in one profile
	MaxDepth       int // frames in one stack
}

// Tenant is one team using a deployment.
type Tenant struct {
	ID        int64
	Name      string
	CreatedAt time.Time
	Disabled  bool
	Limits
}

// Key describes an API key; its secret is never stored.
type Key struct {
	ID         string // visible prefix of the secret
	Name       string
	Scopes     []string
	CreatedAt  time.Time
	LastUsedAt time.Time // zero: never
	ExpiresAt  time.Time // zero: never
	RevokedAt  time.Time // zero: not revoked
}

// AuditEvent records an administrative action or a deletion.
type AuditEvent struct {
	At     time.Time
	Actor  string // key id, "cli" or "retention"
	Action string
	Target string
	Detail map[string]string
}

// ShareLink grants read access to one profile range without a key.
type ShareLink struct {
	TenantID   int64
	ID         string          // visible prefix of the token
	ProfileID  string          // a profile's link ("" for a fleet's)
	Fleet      *FleetSelection // a fleet's link: its selection and window; nil for a profile's
	Event      string
	Start, End *int64 // relative ns; nil: open
	CreatedBy  string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	RevokedAt  time.Time
}

// LiveStream is a live recording's progress: the batch it expects next,
// its segment profiles in order, whether it has ended (it takes no more
// batches) and once finished the profile they became;
// and what its first batch fixed for every later one: app, host, labels,
// the input format asked for and the format its text is in.
type LiveStream struct {
	NextSeq   int64
	Segments  []string
	Ended     bool
	ProfileID string

	App, Host           string
	Labels              map[string]string
	InputFormat, Format string
}

// LiveLabel and LiveSeqLabel mark a live recording's segment profiles:
// live=STREAM, live_seq=N (batch N of the stream).
const (
	LiveLabel    = "live"
	LiveSeqLabel = "live_seq"
)

// LiveSegment reports whether a profile with these labels is a segment of
// a live stream (both labels set), and the stream's name.
func LiveSegment(labels map[string]string) (string, bool) {
	s, ok := labels[LiveLabel]
	if _, seq := labels[LiveSeqLabel]; !ok || !seq || s == "" {
		return "", false
	}
	return s, true
}

// LiveStreamRef names a tenant's live stream.
type LiveStreamRef struct {
	Tenant int64
	Stream string
}

// Begun reports whether the stream has applied a batch.
func (s LiveStream) Begun() bool { return s.NextSeq > 0 }

// ProfileFilter selects profiles in a search.
type ProfileFilter struct {
	App, Host    string
	Labels       map[string]string // all must match
	Since, Until time.Time         // profiles overlapping [Since, Until); zero means open
	PageSize     int               // at most 1000; 0 means 50
	PageToken    string
}

// ProfileRef names one profile of one tenant.
type ProfileRef struct {
	Tenant int64
	ID     string
}

// Reclaimed counts what reclaims deleted from tenant dictionaries: the
// tenants reclaimed, the frame and stack rows deleted and their bytes.
type Reclaimed struct {
	Tenants, Frames, Stacks, Bytes int64
}

// Add adds o to r.
func (r *Reclaimed) Add(o Reclaimed) {
	r.Tenants += o.Tenants
	r.Frames += o.Frames
	r.Stacks += o.Stacks
	r.Bytes += o.Bytes
}

// KeyOptions describe a new API key.
type KeyOptions struct {
	Name      string
	Scopes    []string
	ExpiresAt time.Time // zero: never
	Actor     string    // for the audit log
}
