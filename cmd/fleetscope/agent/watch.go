package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
)

// watch polls the watched directory and spools the files that other tools
// drop there, once a file has stopped changing between two polls: perf.data
// through perf script --header, gzip files as they are, any other file
// gzipped (the server detects its format). A spooled file is removed (or
// moved to WatchDone); one that cannot be read is moved to the watched
// directory's failed/ with a log line. Hidden files and names ending in
// .tmp, .part or ~ are left alone: write there, then rename.
func (a *Agent) watch(ctx context.Context) error {
	type seen struct {
		size int64
		mod  time.Time
	}
	last := map[string]seen{}
	waiting := map[string]seen{} // perf.data files left for want of perf, until they change
	failedDir := filepath.Join(a.cfg.Watch, "failed")
	for {
		des, err := os.ReadDir(a.cfg.Watch)
		if err != nil {
			a.log.Error("cannot read the watched directory", "dir", a.cfg.Watch, "err", err)
		}
		now := map[string]seen{}
		for _, de := range des {
			name := de.Name()
			if !de.Type().IsRegular() || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp") ||
				strings.HasSuffix(name, ".part") || strings.HasSuffix(name, "~") {
				continue
			}
			fi, err := de.Info()
			if err != nil {
				continue
			}
			cur := seen{fi.Size(), fi.ModTime()}
			if w, ok := waiting[name]; ok && w == cur {
				continue
			}
			delete(waiting, name)
			if prev, ok := last[name]; !ok || prev != cur {
				now[name] = cur // changed since the last poll: wait
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			path := filepath.Join(a.cfg.Watch, name)
			// A stop does not cut a file's conversion short: it would
			// look like a bad file.
			fctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			entry, err := a.spoolFile(fctx, path)
			cancel()
			if err != nil {
				if errors.Is(err, ErrPerfMissing) {
					a.log.Error("cannot convert perf.data here: left in place", "file", path, "err", err)
					waiting[name] = cur
					continue
				}
				a.m.WatchedRejected.Inc()
				os.MkdirAll(failedDir, 0o700)
				a.log.Error("cannot read a watched file: moved to failed/", "file", path, "err", err)
				if rerr := os.Rename(path, filepath.Join(failedDir, name)); rerr != nil {
					os.Remove(path)
				}
				continue
			}
			a.m.WatchedFiles.Inc()
			if a.cfg.WatchDone != "" {
				if err := os.Rename(path, filepath.Join(a.cfg.WatchDone, name)); err != nil {
					a.log.Error("spooled, but cannot move the file to the done directory: removing it", "file", path, "err", err)
					os.Remove(path)
				}
			} else if err := os.Remove(path); err != nil {
				a.log.Error("spooled, but cannot remove the file (it will be spooled again; the server stores it once)", "file", path, "err", err)
			}
			a.log.Info("watched file spooled", "file", path, "entry", entry)
		}
		last = now
		if !sleep(ctx, a.cfg.WatchInterval) {
			return nil
		}
	}
}

// spoolFile spools one watched file.
func (a *Agent) spoolFile(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(8)
	m := a.meta(fi.ModTime())
	m.Filename = filepath.Base(path)
	switch {
	case len(head) == 0:
		return "", errors.New("empty file")
	case bytes.HasPrefix(head, []byte("PERFILE2")) || bytes.HasPrefix(head, []byte("PERFFILE")):
		f.Close()
		var hs headerScanner
		return a.spool.Add(m, func(w io.Writer, m *Meta) error {
			n, err := a.cfg.Perf.Script(ctx, path, w, &hs)
			m.RawBytes, m.Anchor = n, anchorFor(hs.h, nil)
			return err
		})
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		// Already compressed: spooled as it is. The anchor, if any, is
		// in the header of the text inside.
		var h perfHeader
		if zr, err := gzip.NewReader(bufio.NewReader(io.NewSectionReader(f, 0, fi.Size()))); err == nil {
			h = scanHeader(zr)
		}
		return a.spool.Add(m, func(w io.Writer, m *Meta) error {
			m.Anchor = anchorFor(h, nil)
			_, err := io.Copy(w, br)
			return err
		})
	default:
		var hs headerScanner
		return a.spool.Add(m, func(w io.Writer, m *Meta) error {
			n, err := gzipTo(w, io.TeeReader(br, &hs))
			m.RawBytes, m.Anchor = n, anchorFor(hs.h, nil)
			if err != nil {
				return fmt.Errorf("reading %s: %w", path, err)
			}
			return nil
		})
	}
}
