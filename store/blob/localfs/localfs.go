// Package localfs is the blob store on a local directory, the embedded
// default ("file:///abs/dir" for blob.Open). The key "a/b" is the file
// <dir>/a/b: a key with '/' lives in subdirectories.
//
// It owns the directory: nothing else may write there. Put writes to a
// temporary file (".fleetscope-tmp-*") in the target directory, fsyncs it
// and renames it into place, so a reader sees the old object or the whole
// new one, never a part. Keys whose last segment starts with that prefix are
// reserved (EINVALID). A stored file leaves the page cache once synced
// (it is read again rarely). Unlike S3, a key cannot also be a directory
// of other keys ("a" and "a/b"): Put returns ECONFLICT. Delete leaves
// empty directories behind.
//
// It knows nothing about profiles or tenants.
package localfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/blob"
)

// tmpPrefix starts the name of every file that Put has not finished.
const tmpPrefix = ".fleetscope-tmp-"

// Store is a blob.Store on a local directory.
type Store struct {
	dir string // absolute
}

var _ blob.Store = (*Store)(nil)

func init() { blob.Register("file", openURL) }

// New returns a Store on dir, creating the directory if needed.
func New(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("localfs %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("localfs: %w", err)
	}
	return &Store{dir: abs}, nil
}

// openURL accepts file:///abs/dir and file://./relative/dir.
func openURL(_ context.Context, u *url.URL, _, _ string) (blob.Store, error) {
	if u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "file URL %q: want file:///abs/dir or file://./relative/dir", u.Redacted())
	}
	var dir string
	switch u.Host {
	case "":
		dir = u.Path // absolute: url.Parse keeps the leading '/'
	case ".":
		dir = "." + u.Path
	default:
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "file URL %q: host must be empty (file:///abs/dir) or \".\" (file://./relative/dir)", u.Redacted())
	}
	if dir == "" || dir == "/" {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "file URL %q: no directory", u.Redacted())
	}
	return New(dir)
}

// Put writes r to a temporary file next to key's file (or links it there:
// stage), fsyncs it, renames it into place and fsyncs the directory.
// Returns EINVALID if r does not hold exactly size bytes (when size is not
// -1), ECONFLICT if key's path is taken by a directory or a file is in the
// way of its directories.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	name, err := s.path(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(name)
	if err := s.mkdirs(dir); err != nil {
		return fmt.Errorf("localfs put %q: %w", key, err)
	}
	tmp, err := stage(ctx, dir, r, size)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = os.Rename(tmp, name)
		if errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY) {
			err = fleetscope.Errorf(fleetscope.ECONFLICT, "blob key %q is a directory of other keys", key)
		}
	}
	if err != nil {
		if tmp != "" {
			os.Remove(tmp)
		}
		return fmt.Errorf("localfs put %q: %w", key, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("localfs put %q: %w", key, err)
	}
	return nil
}

// stage puts r's bytes in a new temporary file in dir, synced to disk and
// out of the page cache (evict), and returns its name (also on error, when
// there is a file to remove). A file read from its start (an upload's
// spool) is hard-linked there if it is on the same file system: its bytes
// are written once, not twice.
func stage(ctx context.Context, dir string, r io.Reader, size int64) (string, error) {
	if f, ok := r.(*os.File); ok {
		if name, ok := link(dir, f, size); ok {
			return name, nil
		}
	}
	tmp, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return "", err
	}
	return tmp.Name(), write(ctx, tmp, r, size)
}

// link hard-links f, at offset 0 and holding size bytes (any, for -1), as
// a new temporary file in dir and syncs it; false if it cannot (another
// file system, a file read from elsewhere than its start).
func link(dir string, f *os.File, size int64) (string, bool) {
	if off, err := f.Seek(0, io.SeekCurrent); err != nil || off != 0 {
		return "", false
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || size >= 0 && fi.Size() != size {
		return "", false
	}
	name := filepath.Join(dir, fmt.Sprintf("%s%016x", tmpPrefix, rand.Uint64()))
	if err := os.Link(f.Name(), name); err != nil {
		return "", false
	}
	if err := f.Sync(); err != nil {
		os.Remove(name)
		return "", false
	}
	evict(f)
	return name, true
}

// copyChunk is how much write copies from a file between checks of its context.
const copyChunk = 16 << 20

// write copies r to f, checks the size, fsyncs and closes f. From a file
// (an upload's spool) it copies in chunks, checking ctx between them:
// io.CopyN lets f copy each in the kernel (copy_file_range) rather than
// through a 32 KB buffer, which cost ingest ~60 ms of syscalls per 74 MB
// profile; any other reader is checked at every read.
func write(ctx context.Context, f *os.File, r io.Reader, size int64) error {
	if _, ok := r.(*os.File); !ok {
		r = ctxReader{ctx, r}
	}
	var n int64
	var err error
	for err == nil {
		if err = ctx.Err(); err != nil {
			break
		}
		var m int64
		m, err = io.CopyN(f, r, copyChunk)
		n += m
		if err == io.EOF {
			err = nil
			break
		}
	}
	if err == nil && size >= 0 && n != size {
		err = fleetscope.Errorf(fleetscope.EINVALID, "got %d bytes, want %d", n, size)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		evict(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirs creates dir and its missing parents, fsyncing each parent so the
// new entries are durable. Returns ECONFLICT if a file is in the way.
func (s *Store) mkdirs(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			rel, _ := filepath.Rel(s.dir, dir)
			return fleetscope.Errorf(fleetscope.ECONFLICT, "blob key %q is in the way of a directory", filepath.ToSlash(rel))
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if err := s.mkdirs(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(parent)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Get opens key's file. Returns ENOTFOUND if there is none.
func (s *Store) Get(_ context.Context, key string) (io.ReadCloser, error) {
	name, err := s.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, s.fail("get", key, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fs.ErrNotExist // a directory of other keys
	}
	if err != nil {
		f.Close()
		return nil, s.fail("get", key, err)
	}
	return f, nil
}

// Stat describes key's file. Returns ENOTFOUND if there is none.
func (s *Store) Stat(_ context.Context, key string) (blob.Info, error) {
	name, err := s.path(key)
	if err != nil {
		return blob.Info{}, err
	}
	fi, err := os.Stat(name)
	if err == nil && !fi.Mode().IsRegular() {
		err = fs.ErrNotExist
	}
	if err != nil {
		return blob.Info{}, s.fail("stat", key, err)
	}
	return blob.Info{Key: key, Size: fi.Size(), Modified: fi.ModTime()}, nil
}

// Delete removes key's file; a missing key is not an error.
func (s *Store) Delete(_ context.Context, key string) error {
	name, err := s.path(key)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(name)
	if err == nil && fi.Mode().IsRegular() {
		err = os.Remove(name)
	}
	if err != nil && !notExist(err) {
		return fmt.Errorf("localfs delete %q: %w", key, err)
	}
	return nil
}

// List walks the deepest directory that prefix names in full and calls fn
// for every finished file whose key starts with prefix.
func (s *Store) List(ctx context.Context, prefix string, fn func(blob.Info) error) error {
	if err := blob.CheckPrefix(prefix); err != nil {
		return err
	}
	start := s.dir
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = filepath.Join(s.dir, filepath.FromSlash(prefix[:i]))
	}
	err := filepath.WalkDir(start, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name == start && notExist(err) {
				return fs.SkipAll // nothing under prefix
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if name == s.dir {
			return nil
		}
		rel, err := filepath.Rel(s.dir, name)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			if name != start && !strings.HasPrefix(key+"/", prefix) {
				return fs.SkipDir
			}
			return nil
		case !d.Type().IsRegular(), strings.HasPrefix(d.Name(), tmpPrefix), !strings.HasPrefix(key, prefix):
			return nil
		}
		fi, err := d.Info()
		if notExist(err) {
			return nil // deleted while we walked
		}
		if err != nil {
			return err
		}
		return fn(blob.Info{Key: key, Size: fi.Size(), Modified: fi.ModTime()})
	})
	if err != nil {
		return fmt.Errorf("localfs list %q: %w", prefix, err)
	}
	return nil
}

// Partials walks the directory for temporary files older than olderThan.
func (s *Store) Partials(ctx context.Context, olderThan time.Time, remove bool, fn func(blob.Info) error) error {
	err := filepath.WalkDir(s.dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if notExist(err) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil
		}
		fi, err := d.Info()
		if notExist(err) || err == nil && !fi.ModTime().Before(olderThan) {
			return nil // finished meanwhile, or still being written
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.dir, name)
		if err := fn(blob.Info{Key: filepath.ToSlash(rel), Size: fi.Size(), Modified: fi.ModTime()}); err != nil {
			return err
		}
		if remove {
			if err := os.Remove(name); err != nil && !notExist(err) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("localfs partials: %w", err)
	}
	return nil
}

// path checks key and returns its file name.
func (s *Store) path(key string) (string, error) {
	if err := blob.CheckKey(key); err != nil {
		return "", err
	}
	if strings.HasPrefix(path.Base(key), tmpPrefix) {
		return "", fleetscope.Errorf(fleetscope.EINVALID, "blob key %q: names starting with %q are reserved", key, tmpPrefix)
	}
	return filepath.Join(s.dir, filepath.FromSlash(key)), nil
}

// fail translates err for key: a missing file (or a file where a directory
// should be) is ENOTFOUND.
func (s *Store) fail(op, key string, err error) error {
	if notExist(err) {
		return fleetscope.Errorf(fleetscope.ENOTFOUND, "blob %q not found", key)
	}
	return fmt.Errorf("localfs %s %q: %w", op, key, err)
}

func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
