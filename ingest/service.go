package ingest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/blob"
	"github.com/fleetscope/fleetscope/store/index"
)

// Meta is what an upload says about its file.
type Meta struct {
	App, Host   string
	Labels      map[string]string
	InputFormat string
	Filename    string
	// Anchor, if set, says the profile clock read AnchorClockNanos at
	// AnchorWall; it places boot-clock profiles in absolute time. HasAnchor
	// says an anchor was sent, so that one whose wall time is the zero time
	// (year 1) is refused, not taken for no anchor.
	HasAnchor        bool
	AnchorClockNanos int64
	AnchorWall       time.Time
	// SpanStart and SpanEnd place a profile without per-sample times (pprof)
	// in absolute time: it covers [SpanStart, SpanEnd).
	SpanStart, SpanEnd time.Time
	// owner, if set, makes the profile its owner's alone: it is stored
	// once for its owner and bytes, never shared by content with an
	// upload of the same bytes or another owner's (a live stream's
	// segments; see Live).
	owner string
}

// identity is what makes a profile the same as one stored: its bytes'
// SHA-256, or for an owned profile the SHA-256 of its owner and that.
func identity(sum []byte, owner string) []byte {
	if owner == "" {
		return sum
	}
	h := sha256.New()
	h.Write([]byte("fleetscope owned profile\x00"))
	h.Write([]byte(owner))
	h.Write([]byte{0})
	h.Write(sum)
	return h.Sum(nil)
}

// Index is what ingest needs of the index (store/postgres implements it).
type Index interface {
	// ProfileBySHA256 returns the tenant's profile with these bytes, or ENOTFOUND.
	ProfileBySHA256(ctx context.Context, tenant int64, sum []byte) (*fleetscope.ProfileInfo, error)
	// StoredBytes returns the bytes a tenant stores (its profiles' raw
	// files and its dictionary rows) and the number of its profiles.
	StoredBytes(ctx context.Context, tenant int64) (bytes, profiles int64, err error)
	// InsertProfile writes a profile's index in one transaction, running
	// beforeCommit last inside it; if the tenant has a profile with the
	// same bytes, it writes nothing and returns that one, created = false.
	InsertProfile(ctx context.Context, tenant int64, p *fleetscope.ProfileInfo, sum []byte, dict *fleetscope.Dict, ix *index.Index, beforeCommit func() error) (*fleetscope.ProfileInfo, bool, error)
	// BlobInUse reports whether any profile refers to a blob key.
	BlobInUse(ctx context.Context, key string) (bool, error)
}

// Service stores uploads: the raw bytes in the blob store under the tenant
// and their SHA-256, the index in Postgres.
type Service struct {
	DB    Index
	Blobs blob.Store
	// MaxUploadBytes bounds an upload as sent; MaxRawBytes once
	// decompressed (gzip bombs).
	MaxUploadBytes, MaxRawBytes int64
	// Shape bounds every upload's shape (zero: DefaultShape); a tenant's
	// limits may tighten it.
	Shape   Shape
	TempDir string // spool for uploads (see PrepareSpool); "" = os.TempDir()
	Log     *slog.Logger
	Now     func() time.Time
	// IndexWriters bounds the index transactions in flight (0: 4), so
	// that uploads never hold every pooled database connection and
	// queries do not queue behind them.
	IndexWriters int
	// Stored, when set, is told of each profile stored (not of an upload
	// of bytes already stored): the server compacts the fleet's stack
	// buckets its samples fall in.
	Stored func(tenant int64, p *fleetscope.ProfileInfo)

	writersOnce sync.Once
	writers     chan struct{}
}

// Ingest reads one profile file from body and stores it for the principal's
// tenant. It streams: the bytes are spooled to a temporary file and hashed
// while they are parsed, never held in memory. The blob is written once the
// parse succeeded, then the index in one transaction; if that fails, the
// blob is removed again unless another profile uses it. Uploading the same
// bytes again returns the stored profile with created = false.
func (s *Service) Ingest(ctx context.Context, p fleetscope.Principal, m Meta, body io.Reader) (*fleetscope.ProfileInfo, bool, error) {
	if err := checkMeta(&m); err != nil {
		return nil, false, err
	}
	spool, err := os.CreateTemp(s.TempDir, "fleetscope-upload-*")
	if err != nil {
		return nil, false, spoolError(err)
	}
	defer func() {
		spool.Close()
		os.Remove(spool.Name())
	}()

	// body -> (spool, hash, parser), with the size limit on what is sent:
	// the parser reads the stream itself, and each piece it reads is
	// spooled and hashed as it passes (no second goroutine, pipe or copy
	// in between: ~15 ms of CPU per 74 MB upload, and a handoff per MB).
	maxUpload := s.MaxUpload(p)
	maxRaw := tighter(s.MaxRawBytes, p.Limits.MaxRawBytes)
	sent := &tee{r: &limited{r: body, left: maxUpload, what: "upload", limit: maxUpload}, spool: spool, hash: sha256.New()}
	parsed, perr := ParseIndex(sent, m.InputFormat, maxRaw, s.shape(p))
	if perr == nil {
		// A parser may stop before the end (trailing bytes after a JSON
		// document): the stored file and its hash are all that was sent.
		_, perr = io.Copy(io.Discard, sent)
	}
	if sent.err != nil {
		return nil, false, sent.err // the client's stream failed or was too large, or the spool
	}
	if perr != nil {
		return nil, false, perr
	}
	size := sent.n
	if err := checkProfile(parsed); err != nil {
		return nil, false, err
	}
	info := Describe(m, parsed, s.now())
	if err := fleetscope.CheckWallTime(info.StartTime, "the profile's start"); err != nil {
		return nil, false, err
	}
	if err := fleetscope.CheckWallTime(info.EndTime, "the profile's end"); err != nil {
		return nil, false, err
	}
	sum := sent.hash.Sum(nil)
	id := identity(sum, m.owner)

	if existing, err := s.DB.ProfileBySHA256(ctx, p.TenantID, id); err == nil {
		return existing, false, nil
	} else if fleetscope.ErrorCode(err) != fleetscope.ENOTFOUND {
		return nil, false, err
	}

	if q := p.Limits.MaxStoredBytes; q > 0 {
		used, _, err := s.DB.StoredBytes(ctx, p.TenantID)
		if err != nil {
			return nil, false, err
		}
		if used+size > q {
			return nil, false, fleetscope.Errorf(fleetscope.ETOOLARGE, "storage quota exceeded: %d of %d bytes used, this upload needs %d", used, q, size)
		}
	}
	info.SHA256 = fmt.Sprintf("%x", id)
	info.SizeBytes = size
	info.BlobKey = fmt.Sprintf("%d/%x", p.TenantID, sum) // by content: owned or not, the same bytes are one blob
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return nil, false, err
	}
	// The raw file goes to the blob store while the index is written; the
	// index commits only once the blob is durable.
	putDone := make(chan error, 1)
	go func() { putDone <- s.Blobs.Put(ctx, info.BlobKey, spool, size) }()
	var putErr error
	waited := false
	waitPut := func() error {
		if !waited {
			putErr, waited = <-putDone, true
		}
		return putErr
	}
	if err := s.writeSlot(ctx); err != nil {
		waitPut()
		s.dropBlob(info.BlobKey)
		return nil, false, err
	}
	stored, created, err := s.DB.InsertProfile(ctx, p.TenantID, info, id, parsed.Profile.Dict, parsed.Index, waitPut)
	<-s.writers
	if perr := waitPut(); perr != nil {
		s.dropBlob(info.BlobKey)
		// Whatever the blob store said, the upload itself is fine: keys are
		// ours (tenant and hash), so the store is at fault. Retry later.
		if errors.Is(perr, context.Canceled) {
			return nil, false, perr
		}
		return nil, false, fleetscope.Wrap(perr, fleetscope.EUNAVAILABLE, "could not store the raw file (blob store unavailable): nothing was stored, retry later")
	}
	if err != nil {
		s.dropBlob(info.BlobKey)
		return nil, false, unavailable(err, "could not write the index: nothing was stored, retry later")
	}
	if created && s.Stored != nil {
		s.Stored(p.TenantID, stored)
	}
	return stored, created, nil
}

// tee writes what is read through it to the spool and the hash, and keeps
// the first failure of either side (not io.EOF): the client's stream, the
// size limit or the spool, which the parser would report as bad input.
type tee struct {
	r     io.Reader
	spool *os.File
	hash  hash.Hash
	n     int64
	err   error
}

func (t *tee) Read(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	n, err := t.r.Read(p)
	if n > 0 {
		if _, werr := t.spool.Write(p[:n]); werr != nil {
			t.err = spoolError(werr)
			return 0, t.err
		}
		t.hash.Write(p[:n])
		t.n += int64(n)
	}
	if err != nil && err != io.EOF {
		t.err = err
	}
	return n, err
}

func spoolError(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fleetscope.Wrap(err, fleetscope.EUNAVAILABLE, "the server's upload spool is out of disk space: nothing was stored, retry later")
	}
	return fleetscope.Wrap(err, fleetscope.EUNAVAILABLE, "the server's upload spool failed: nothing was stored, retry later")
}

// unavailable keeps fleetscope errors and wraps others (driver and
// network failures, logged by the caller with their cause) in a retryable
// one with msg.
func unavailable(err error, msg string) error {
	var fe *fleetscope.Error
	if errors.As(err, &fe) || errors.Is(err, context.Canceled) {
		return err
	}
	return fleetscope.Wrap(err, fleetscope.EUNAVAILABLE, msg)
}

// dropBlob removes a blob whose index write failed, unless a profile refers
// to it (the same bytes stored meanwhile).
func (s *Service) dropBlob(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := blob.DeleteUnused(ctx, s.Blobs, key, s.DB.BlobInUse); err != nil && s.Log != nil { // check --fix removes it later
		s.Log.Warn("orphan blob left after failed ingest", "key", key, "err", err)
	}
}

func checkMeta(m *Meta) error {
	m.App = strings.TrimSpace(m.App)
	if m.App == "" {
		return fleetscope.Errorf(fleetscope.EINVALID, "an upload needs an app name")
	}
	if err := fleetscope.CheckProfileMeta(m.App, m.Host, m.Labels); err != nil {
		return err
	}
	if len(m.Filename) > 1000 {
		return fleetscope.Errorf(fleetscope.EINVALID, "file name too long (at most 1000 bytes)")
	}
	if err := fleetscope.CheckText("file name", m.Filename); err != nil {
		return err
	}
	if m.HasAnchor || !m.AnchorWall.IsZero() {
		if err := fleetscope.CheckWallTime(m.AnchorWall, "the clock anchor's wall time"); err != nil {
			return err
		}
		if err := fleetscope.CheckTime(m.AnchorClockNanos); err != nil {
			return fleetscope.Errorf(fleetscope.EINVALID, "the clock anchor's clock reading: %s", err.Error())
		}
	}
	for what, t := range map[string]time.Time{"span start": m.SpanStart, "span end": m.SpanEnd} {
		if !t.IsZero() {
			if err := fleetscope.CheckWallTime(t, what); err != nil {
				return err
			}
		}
	}
	if m.InputFormat != "" {
		if _, err := Lookup(m.InputFormat); err != nil {
			return err
		}
	}
	return nil
}

// checkProfile refuses what the index cannot store or show: frame and event
// names that are not UTF-8 text (Postgres text holds neither invalid UTF-8
// nor NUL) or hold control characters (a terminal or a log would obey
// them); header facts are made storable (they are informational).
func checkProfile(parsed *Parsed) error {
	d := parsed.Profile.Dict
	for i := range d.NumFrames() {
		if err := checkName("function or process name", d.FrameAt(fleetscope.FrameID(i)).Name); err != nil {
			return err
		}
	}
	for _, e := range d.Events() {
		if err := checkName("event name", e); err != nil {
			return err
		}
	}
	for k, v := range parsed.Profile.Meta {
		clean := strings.ReplaceAll(strings.ToValidUTF8(v, "\uFFFD"), "\x00", "")
		if !utf8.ValidString(k) || strings.IndexByte(k, 0) >= 0 {
			delete(parsed.Profile.Meta, k)
		} else if clean != v {
			parsed.Profile.Meta[k] = clean
		}
	}
	return nil
}

// checkName returns EINVALID unless name is storable text (the rule of
// fleetscope.CheckText), quoting at most its first 80 bytes.
func checkName(what, name string) error {
	if !utf8.ValidString(name) {
		return fleetscope.Errorf(fleetscope.EINVALID, "%s %.80q is not UTF-8 text (invalid bytes): not storable", what, name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fleetscope.Errorf(fleetscope.EINVALID, "%s %.80q holds a control character (%U): names must be text without NUL or control characters", what, name, r)
		}
	}
	return nil
}

// Parsed is a profile parsed and indexed in memory: what ingest stores, and
// what the local commands query (through store/memory).
type Parsed struct {
	Profile *fleetscope.Profile
	Index   *index.Index
}

// Shape bounds what one profile may hold beyond its size in bytes, so that
// the memory an upload takes is bounded by limits, not by its shape. Zero
// fields mean no bound.
type Shape struct {
	MaxStacks         int // distinct stacks
	MaxDepth          int // frames in one stack
	MaxFrames         int // frames in all distinct stacks together
	MaxEvents         int // distinct events
	MaxDistinctFrames int // distinct frames (function and process names)
	MaxNameBytes      int // bytes in one frame or event name
}

// DefaultShape is the server's bound unless configured otherwise: a busy
// 64-CPU host sampled for a minute has tens of thousands of distinct
// stacks; perf records at most 127 frames unless told otherwise. Real
// symbols stay far below 8 KiB (long C++ and Rust template names reach a
// few KiB) and a profile's distinct functions below a million.
var DefaultShape = Shape{MaxStacks: 250_000, MaxDepth: 4096, MaxFrames: 25_000_000, MaxEvents: 1024,
	MaxDistinctFrames: 1_000_000, MaxNameBytes: 8 << 10}

// shapeCheck is how far Shape.check has looked at a growing dictionary.
type shapeCheck struct {
	stacks, frames, events int // entries checked so far
	stackFrames            int // frames in the stacks checked so far
}

// check returns ETOOLARGE when the dictionary outgrew the shape; c records
// what earlier calls checked, so each entry is looked at once.
func (sh Shape) check(d *fleetscope.Dict, c *shapeCheck) error {
	too := func(setting, format string, args ...any) error {
		return fleetscope.Errorf(fleetscope.ETOOLARGE, format+" (the server's limit; see "+setting+")", args...)
	}
	if n := len(d.Events()); d.EventsFull() || sh.MaxEvents > 0 && n > sh.MaxEvents {
		return too("the README's limits", "more than %d distinct events", min(sh.MaxEvents, fleetscope.MaxEvents))
	}
	if sh.MaxDistinctFrames > 0 && d.NumFrames() > sh.MaxDistinctFrames {
		return too("the documented limits", "more than %d distinct function names", sh.MaxDistinctFrames)
	}
	if sh.MaxNameBytes > 0 {
		long := func(what, name string) error {
			return too("the documented limits", "a %s of %d bytes (%.40q...), more than %d bytes", what, len(name), name, sh.MaxNameBytes)
		}
		for ; c.frames < d.NumFrames(); c.frames++ {
			if name := d.FrameAt(fleetscope.FrameID(c.frames)).Name; len(name) > sh.MaxNameBytes {
				return long("function or process name", name)
			}
		}
		for ; c.events < len(d.Events()); c.events++ {
			if name := d.Events()[c.events]; len(name) > sh.MaxNameBytes {
				return long("event name", name)
			}
		}
	}
	if sh.MaxStacks > 0 && d.NumStacks() > sh.MaxStacks {
		return too("FLEETSCOPE_MAX_STACKS and the tenant's max_stacks", "more than %d distinct stacks", sh.MaxStacks)
	}
	for ; c.stacks < d.NumStacks(); c.stacks++ {
		n := len(d.StackFrames(fleetscope.StackID(c.stacks)))
		if sh.MaxDepth > 0 && n > sh.MaxDepth {
			return too("FLEETSCOPE_MAX_DEPTH and the tenant's max_depth", "a stack of %d frames, more than %d", n, sh.MaxDepth)
		}
		c.stackFrames += n
	}
	if sh.MaxFrames > 0 && c.stackFrames > sh.MaxFrames {
		return too("the README's limits", "more than %d frames in its distinct stacks", sh.MaxFrames)
	}
	return nil
}

// ParseIndex decompresses r, detects its format (or takes inputFormat),
// parses it and builds its index. maxRaw bounds the decompressed size
// (0: none); shape bounds the profile's shape. Input that is not a profile
// is EINVALID, and so is one whose values (periods) for an event add up to
// more than math.MaxInt64 (they are never wrapped); one over a bound is
// ETOOLARGE, found while parsing.
func ParseIndex(r io.Reader, inputFormat string, maxRaw int64, shape Shape) (*Parsed, error) {
	b := index.NewBuilder()
	var checked shapeCheck
	var sums []uint64 // periods (values) by event, each at most math.MaxInt64
	prof, err := Parse(r, inputFormat, maxRaw, func(p *fleetscope.Profile, batch []fleetscope.Sample) error {
		if err := shape.check(p.Dict, &checked); err != nil {
			return err
		}
		for _, s := range batch {
			for int(s.Event) >= len(sums) {
				sums = append(sums, 0)
			}
			if s.Period > math.MaxInt64-sums[s.Event] {
				return fleetscope.Errorf(fleetscope.EINVALID, "the values (periods) of event %q add up to more than %d: a profile's total for each event must fit in a signed 64-bit integer", p.Dict.Events()[s.Event], int64(math.MaxInt64))
			}
			sums[s.Event] += s.Period
		}
		return b.Add(batch)
	})
	if err == nil { // what came after the last batch, if anything
		err = shape.check(prof.Dict, &checked)
	}
	if err != nil {
		var fe *fleetscope.Error
		if errors.As(err, &fe) {
			return nil, err
		}
		return nil, fleetscope.Wrap(err, fleetscope.EINVALID, "reading the profile: "+err.Error())
	}
	ix, err := b.Build(prof.Dict.Idle, prof.Dict.Events(), prof.IsWeighted)
	if err != nil {
		return nil, err
	}
	return &Parsed{Profile: prof, Index: ix}, nil
}

// writeSlot waits for a place among the index writers (or ctx's end).
func (s *Service) writeSlot(ctx context.Context) error {
	s.writersOnce.Do(func() {
		n := s.IndexWriters
		if n <= 0 {
			n = 4
		}
		s.writers = make(chan struct{}, n)
	})
	select {
	case s.writers <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Describe returns a parsed profile's metadata (all but its id, hash and
// size), placing it in absolute time: by its own epoch timestamps, the
// upload's clock anchor or span, or else as ending at now.
func Describe(m Meta, parsed *Parsed, now time.Time) *fleetscope.ProfileInfo {
	prof, ix := parsed.Profile, parsed.Index
	if m.Host == "" {
		m.Host = prof.Meta["hostname"]
	}
	info := &fleetscope.ProfileInfo{
		App: m.App, Host: m.Host, Labels: m.Labels, Format: prof.Format, Filename: m.Filename,
		Samples: int64(prof.Samples), Timed: ix.Timed, StartSecond: ix.StartSecond,
		TimeUnitNanos: ix.TimeUnitNanos, Meta: prof.Meta,
	}
	counts := make([]int64, len(ix.Events))
	for i, e := range ix.Events {
		info.Events = append(info.Events, fleetscope.EventInfo{Name: e.Name, Samples: e.Samples, Period: e.Period, Weighted: e.Weighted})
		counts[i] = e.Samples
	}
	info.DefaultEvent = int(fleetscope.DefaultEvent(counts))
	if ix.Timed {
		info.DurationNanos = ix.LastNanos - ix.StartSecond*1e9
	}
	start := ix.StartSecond * 1e9
	switch {
	case ix.Timed && ix.StartSecond >= 1e9: // epoch seconds: after 2001, no host is up that long
		info.TimeSource = "realtime"
		info.StartTime = time.Unix(ix.StartSecond, 0)
	case !ix.Timed && !m.SpanStart.IsZero():
		info.TimeSource = "span"
		info.StartTime = m.SpanStart
		if m.SpanEnd.After(m.SpanStart) {
			info.DurationNanos = int64(m.SpanEnd.Sub(m.SpanStart))
		}
	case !ix.Timed && prof.Meta["time_nanos"] != "":
		// The profiler's own span (pprof's time_nanos and duration_nanos).
		t, _ := strconv.ParseInt(prof.Meta["time_nanos"], 10, 64)
		d, _ := strconv.ParseInt(prof.Meta["duration_nanos"], 10, 64)
		info.TimeSource = "span"
		info.StartTime = time.Unix(0, t)
		info.DurationNanos = max(d, 0)
	case !m.AnchorWall.IsZero():
		info.TimeSource = "anchored"
		info.StartTime = m.AnchorWall.Add(time.Duration(start - m.AnchorClockNanos))
	default: // the recording ended about when it was uploaded
		info.TimeSource = "upload"
		info.StartTime = now.Add(-time.Duration(info.DurationNanos)).Truncate(time.Second)
	}
	info.EndTime = info.StartTime.Add(time.Duration(info.DurationNanos))
	if ix.Timed {
		info.WallShiftNanos = info.StartTime.UnixNano() - start
	}
	return info
}

// Ignored returns the metadata an upload of bytes already stored asked for
// that differs from the stored profile's, in the order "app", "host",
// "labels": what the upload did not change (a stored profile keeps the
// metadata of its first upload). A host left out is the one the profile
// records, as Describe defaults it.
func Ignored(m Meta, stored *fleetscope.ProfileInfo) []string {
	var out []string
	if strings.TrimSpace(m.App) != stored.App {
		out = append(out, "app")
	}
	host := m.Host
	if host == "" {
		host = stored.Meta["hostname"]
	}
	if host != stored.Host {
		out = append(out, "host")
	}
	if !maps.Equal(m.Labels, stored.Labels) {
		out = append(out, "labels")
	}
	return out
}

// shape is the shape bound of p's uploads: the tighter of the server's and
// the tenant's.
func (s *Service) shape(p fleetscope.Principal) Shape {
	sh := s.Shape
	if sh == (Shape{}) {
		sh = DefaultShape
	}
	sh.MaxStacks = int(tighter(int64(sh.MaxStacks), int64(p.Limits.MaxStacks)))
	sh.MaxDepth = int(tighter(int64(sh.MaxDepth), int64(p.Limits.MaxDepth)))
	return sh
}

// MaxUpload is the largest upload, as sent, that p may make: the tighter of
// the server's limit and the tenant's (0: none).
func (s *Service) MaxUpload(p fleetscope.Principal) int64 {
	return tighter(s.MaxUploadBytes, p.Limits.MaxUploadBytes)
}

// tighter returns the smaller positive limit (0: none).
func tighter(a, b int64) int64 {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// limited fails a read past its limit with ETOOLARGE.
type limited struct {
	r     io.Reader
	left  int64
	limit int64
	what  string
}

func (l *limited) Read(p []byte) (int, error) {
	if l.limit <= 0 {
		return l.r.Read(p)
	}
	if l.left <= 0 {
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n > 0 {
			return 0, fleetscope.Errorf(fleetscope.ETOOLARGE, "%s larger than the limit of %d bytes", l.what, l.limit)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
