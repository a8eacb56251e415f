package agent

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Meta is what the agent knows about a recording; it travels with the
// recording through the spool to the upload.
type Meta struct {
	App         string            `json:"app"`
	Host        string            `json:"host,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	InputFormat string            `json:"input_format,omitempty"`
	Filename    string            `json:"filename,omitempty"`
	Anchor      *Anchor           `json:"anchor,omitempty"`
	RecordedAt  time.Time         `json:"recorded_at"`
	RawBytes    int64             `json:"raw_bytes,omitempty"` // before compression, when known
}

// padded returns hdr padded with spaces to slot bytes, then a newline.
func padded(hdr []byte, slot int) []byte {
	out := append(append([]byte(nil), hdr...), bytes.Repeat([]byte(" "), slot-len(hdr))...)
	return append(out, '\n')
}

// spoolMagic starts every spool entry: the format's name and version, then
// the metadata as one line of JSON, then the bytes to upload.
const spoolMagic = "fleetscope-spool-1 "

// Spool is a durable queue of recordings in a directory. An entry is one
// file in queue/, written as a temporary file, fsynced and renamed, so a
// crash leaves either the whole entry or none; entries are removed only once
// the server has stored them. The queue is bounded in bytes: adding past
// the bound drops the oldest entries (never one being uploaded), logged and
// counted. One agent at a time owns a spool (a lock file).
type Spool struct {
	dir      string
	maxBytes int64
	log      *slog.Logger
	metrics  *Metrics
	lock     *os.File

	mu       sync.Mutex
	entries  []entry // oldest first
	bytes    int64
	inflight map[string]bool
	changed  chan struct{} // closed and replaced on every change
	dropped  int64
}

type entry struct {
	name string
	size int64
}

// Entry is a spooled recording handed out for upload.
type Entry struct {
	Name string
	Size int64 // of the file, header included
	Path string
}

// OpenSpool opens (creating) the spool in dir, bounded to maxBytes (0: no
// bound). It removes temporary files a crash left behind. Returns an error
// if another agent holds the spool.
func OpenSpool(dir string, maxBytes int64, log *slog.Logger, m *Metrics) (*Spool, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if m == nil {
		m = NewMetrics(nil)
	}
	for _, d := range []string{dir, filepath.Join(dir, "queue"), filepath.Join(dir, "work"), filepath.Join(dir, "failed")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("spool: %w (choose another directory with --spool)", err)
		}
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		owner, _ := os.ReadFile(lock.Name())
		lock.Close()
		return nil, fmt.Errorf("spool %s is in use by another agent (pid %s): give each agent its own --spool", dir, strings.TrimSpace(string(owner)))
	}
	lock.Truncate(0)
	lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)

	s := &Spool{dir: dir, maxBytes: maxBytes, log: log, metrics: m, lock: lock, inflight: map[string]bool{}, changed: make(chan struct{})}
	des, err := os.ReadDir(s.queueDir())
	if err != nil {
		lock.Close()
		return nil, err
	}
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".tmp-") {
			os.Remove(filepath.Join(s.queueDir(), name))
			continue
		}
		if !strings.HasSuffix(name, ".fsp") {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue
		}
		s.entries = append(s.entries, entry{name, fi.Size()})
		s.bytes += fi.Size()
	}
	slices.SortFunc(s.entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	s.gauge()
	return s, nil
}

// Close releases the spool's lock.
func (s *Spool) Close() error { return s.lock.Close() }

func (s *Spool) queueDir() string { return filepath.Join(s.dir, "queue") }

// WorkDir is where recordings in progress are kept.
func (s *Spool) WorkDir() string { return filepath.Join(s.dir, "work") }

func (s *Spool) gauge() {
	s.metrics.SpoolBytes.Set(float64(s.bytes))
	s.metrics.SpoolFiles.Set(float64(len(s.entries)))
}

// notify wakes the waiters; s.mu is held.
func (s *Spool) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
	s.gauge()
}

// Add writes a new entry: m as its header, then what write writes. write
// may change the metadata through its pointer (the anchor perf's header
// gives, the raw size); the header is rewritten in place before the entry
// is committed. The entry is durable (fsynced, renamed, directory fsynced)
// when Add returns. It returns the entry's name.
func (s *Spool) Add(m Meta, write func(w io.Writer, m *Meta) error) (string, error) {
	hdr, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	// Room for what write may add (an anchor, a size): the header is
	// padded with spaces, which JSON ignores.
	slot := len(hdr) + 512
	tmp, err := os.CreateTemp(s.queueDir(), ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 256<<10)
	bw.WriteString(spoolMagic)
	bw.Write(padded(hdr, slot))
	if err := write(bw, &m); err != nil {
		return "", err
	}
	if err := bw.Flush(); err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	if hdr2, err := json.Marshal(m); err != nil {
		return "", err
	} else if string(hdr2) != string(hdr) {
		if len(hdr2) > slot {
			return "", fmt.Errorf("spool: header grew past its slot (%d > %d bytes)", len(hdr2), slot)
		}
		if _, err := tmp.WriteAt(padded(hdr2, slot), int64(len(spoolMagic))); err != nil {
			return "", fmt.Errorf("spool: %w", err)
		}
	}
	if err := tmp.Sync(); err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	fi, err := tmp.Stat()
	if err != nil {
		return "", err
	}
	size := fi.Size()
	if err := tmp.Close(); err != nil {
		return "", err
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	at := m.RecordedAt
	if at.IsZero() {
		at = time.Now()
	}
	name := fmt.Sprintf("%020d-%s.fsp", at.UnixNano(), hex.EncodeToString(rnd[:]))

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.maxBytes > 0 && size > s.maxBytes {
		s.dropped++
		s.metrics.Dropped.Inc()
		s.log.Error("recording larger than the whole spool: dropped", "bytes", size, "max_spool_bytes", s.maxBytes, "dropped_total", s.dropped)
		return "", fmt.Errorf("recording of %d bytes is larger than the spool bound of %d bytes", size, s.maxBytes)
	}
	s.makeRoom(size)
	if err := os.Rename(tmp.Name(), filepath.Join(s.queueDir(), name)); err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	tmp = nil
	if err := syncDir(s.queueDir()); err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	i, _ := slices.BinarySearchFunc(s.entries, name, func(e entry, n string) int { return strings.Compare(e.name, n) })
	s.entries = slices.Insert(s.entries, i, entry{name, size})
	s.bytes += size
	s.notify()
	return name, nil
}

// makeRoom drops the oldest entries not being uploaded until size more
// bytes fit; s.mu is held.
func (s *Spool) makeRoom(size int64) {
	if s.maxBytes <= 0 {
		return
	}
	for i := 0; s.bytes+size > s.maxBytes && i < len(s.entries); {
		e := s.entries[i]
		if s.inflight[e.name] {
			i++
			continue
		}
		if err := os.Remove(filepath.Join(s.queueDir(), e.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Error("spool: cannot drop an entry", "entry", e.name, "err", err)
			i++
			continue
		}
		s.entries = slices.Delete(s.entries, i, i+1)
		s.bytes -= e.size
		s.dropped++
		s.metrics.Dropped.Inc()
		s.log.Warn("spool full: dropped the oldest recording", "entry", e.name, "bytes", e.size,
			"spool_bytes", s.bytes, "max_spool_bytes", s.maxBytes, "dropped_total", s.dropped)
	}
}

// Next hands out the oldest entry not being uploaded, marking it in flight.
// ok is false when there is none; wait on the returned channel for a change.
func (s *Spool) Next() (e Entry, ok bool, changed <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, en := range s.entries {
		if !s.inflight[en.name] {
			s.inflight[en.name] = true
			return Entry{Name: en.name, Size: en.size, Path: filepath.Join(s.queueDir(), en.name)}, true, s.changed
		}
	}
	return Entry{}, false, s.changed
}

// Release returns an entry to the queue after a failed upload.
func (s *Spool) Release(e Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, e.Name)
	s.notify()
}

// Done removes an uploaded entry.
func (s *Spool) Done(e Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, e.Name)
	err := os.Remove(e.Path)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	s.forget(e.Name)
	return err
}

// Fail moves an entry the server refused for good to failed/ (keeping the
// newest 20 there, for a look).
func (s *Spool) Fail(e Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, e.Name)
	failed := filepath.Join(s.dir, "failed")
	if err := os.Rename(e.Path, filepath.Join(failed, e.Name)); err != nil {
		os.Remove(e.Path)
	}
	s.forget(e.Name)
	if des, err := os.ReadDir(failed); err == nil && len(des) > 20 {
		for _, de := range des[:len(des)-20] {
			os.Remove(filepath.Join(failed, de.Name()))
		}
	}
}

// forget drops an entry from the index; s.mu is held.
func (s *Spool) forget(name string) {
	if i := slices.IndexFunc(s.entries, func(e entry) bool { return e.name == name }); i >= 0 {
		s.bytes -= s.entries[i].size
		s.entries = slices.Delete(s.entries, i, i+1)
	}
	s.notify()
}

// Len returns the number of spooled entries and their bytes.
func (s *Spool) Len() (int, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries), s.bytes
}

// Dropped returns how many entries the bound has dropped since the spool
// was opened.
func (s *Spool) Dropped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Changed returns a channel closed at the next change of the queue.
func (s *Spool) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// OpenEntry reads an entry's header and returns its metadata and a reader
// of the bytes to upload (which the caller closes), and their length.
func OpenEntry(path string) (Meta, io.ReadCloser, int64, error) {
	var m Meta
	f, err := os.Open(path)
	if err != nil {
		return m, nil, 0, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	line, err := br.ReadSlice('\n')
	if err != nil || !bytes.HasPrefix(line, []byte(spoolMagic)) {
		f.Close()
		return m, nil, 0, fmt.Errorf("%s: not a spool entry", path)
	}
	if err := json.Unmarshal(line[len(spoolMagic):], &m); err != nil {
		f.Close()
		return m, nil, 0, fmt.Errorf("%s: bad header: %w", path, err)
	}
	hdr := int64(len(line))
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return m, nil, 0, err
	}
	return m, readCloser{br, f}, fi.Size() - hdr, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
