// Package plugin runs external converters: executables that teach
// fleetscope a profiler's format without changes to fleetscope. A plugin
// answers a detect probe on an input's first bytes with a confidence and
// converts a whole input to perf script text or (timestamped) folded
// stacks, which this package parses with ingest/perf or ingest/folded. The
// protocol is in docs/formats.md. This package finds and runs plugins; it
// does not register them (package ingest does).
package plugin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/folded"
	"github.com/fleetscope/fleetscope/ingest/perf"
)

const (
	// EnvDir names the directories (a list like PATH) whose executables
	// are plugins.
	EnvDir = "FLEETSCOPE_PLUGIN_DIR"
	// Prefix starts the name of a plugin found on PATH:
	// fleetscope-convert-NAME.
	Prefix = "fleetscope-convert-"
	// EnvProtocol is set, to the protocol version, in a plugin's
	// environment.
	EnvProtocol = "FLEETSCOPE_PLUGIN_PROTOCOL"
	// Protocol is the protocol version.
	Protocol = "1"
	// DetectTimeout bounds a detect probe.
	DetectTimeout = 5 * time.Second
	// HeadSize is how many leading bytes a detect probe gets (at most).
	HeadSize = 64 << 10
)

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// Plugin is one converter executable.
type Plugin struct {
	Name string // the input format's name: NAME of fleetscope-convert-NAME
	Path string
}

// Discover finds the plugins: every executable file in the directories of
// $FLEETSCOPE_PLUGIN_DIR (named by its file name without the
// "fleetscope-convert-" prefix and without an extension), then every
// fleetscope-convert-NAME executable on $PATH. The first plugin found for a
// name wins; names must match [A-Za-z0-9][A-Za-z0-9_-]*. Returns the
// plugins found and, if a directory of $FLEETSCOPE_PLUGIN_DIR cannot be
// read, an error naming it.
func Discover() ([]Plugin, error) {
	var (
		out   []Plugin
		seen  = map[string]bool{}
		probs []string
	)
	add := func(dir string, onPath bool) {
		files, err := listings.files(dir)
		if err != nil {
			if !onPath {
				probs = append(probs, fmt.Sprintf("%s %s: %v", EnvDir, dir, err))
			}
			return
		}
		for _, file := range files {
			name, prefixed := strings.CutPrefix(file, Prefix)
			if onPath && !prefixed {
				continue
			}
			if !onPath {
				name = strings.TrimSuffix(name, filepath.Ext(name))
			}
			if !validName.MatchString(name) || seen[name] {
				continue
			}
			path := filepath.Join(dir, file)
			if !executable(path) {
				continue
			}
			seen[name] = true
			out = append(out, Plugin{Name: name, Path: path})
		}
	}
	for _, dir := range filepath.SplitList(os.Getenv(EnvDir)) {
		if dir != "" {
			add(dir, false)
		}
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir != "" {
			add(dir, true)
		}
	}
	if len(probs) > 0 {
		return out, errors.New(strings.Join(probs, "; "))
	}
	return out, nil
}

// listings remembers the file names of the directories Discover reads, by
// each directory's modification time: an upload probes for plugins, and
// reading every directory on PATH (thousands of names in /usr/bin) each
// time cost more than parsing a small profile. A directory is read again
// when its modification time changes, or while it is too recent to tell a
// later change by it (file systems that keep coarse times).
var listings = &dirCache{dirs: map[string]dirListing{}}

type dirCache struct {
	mu   sync.Mutex
	dirs map[string]dirListing
}

type dirListing struct {
	mtime time.Time
	files []string
}

// trustAfter is how old a directory's modification time must be for its
// listing to be reused.
const trustAfter = 2 * time.Second

func (c *dirCache) files(dir string) ([]string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	l, ok := c.dirs[dir]
	c.mu.Unlock()
	if ok && l.mtime.Equal(st.ModTime()) && time.Since(l.mtime) > trustAfter {
		return l.files, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := make([]string, len(entries))
	for i, e := range entries {
		files[i] = e.Name()
	}
	c.mu.Lock()
	c.dirs[dir] = dirListing{st.ModTime(), files}
	c.mu.Unlock()
	return files, nil
}

func executable(path string) bool {
	st, err := os.Stat(path) // follows symlinks
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

func (p Plugin) command(ctx context.Context, mode string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, p.Path, mode)
	cmd.Env = append(os.Environ(), EnvProtocol+"="+Protocol)
	cmd.WaitDelay = time.Second // a plugin's children must not hold us up
	return cmd
}

// Detect runs the detect probe on head and returns the plugin's confidence,
// 0 to 100; 0 if the probe fails (see Probe).
func (p Plugin) Detect(head []byte) int {
	c, _ := p.Probe(head)
	return c
}

// Probe runs `PLUGIN detect` with the first HeadSize bytes of head on
// standard input and reads a confidence (an integer, clamped to 0-100)
// from its standard output. It fails if the plugin exits non-zero, takes
// longer than DetectTimeout or prints anything else.
func (p Plugin) Probe(head []byte) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), DetectTimeout)
	defer cancel()
	cmd := p.command(ctx, "detect")
	cmd.Stdin = bytes.NewReader(head[:min(len(head), HeadSize)])
	var out, stderr tail
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("plugin %s detect: %v%s", p.Name, err, stderr.suffix())
	}
	c, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		return 0, fmt.Errorf("plugin %s detect: printed %q, not a confidence 0-100", p.Name, out.String())
	}
	return max(0, min(c, 100)), nil
}

// Parse runs `PLUGIN convert` with r on standard input and parses its
// standard output as it comes: perf script text or folded stacks (with or
// without timestamps), recognised by content. The profile's Format is the
// plugin's name; Meta records the converter and what it wrote. Returns
// EINVALID, with the end of the plugin's standard error, if the plugin
// fails or writes neither.
func (p Plugin) Parse(r io.Reader, sink func(*fleetscope.Profile, []fleetscope.Sample) error) (*fleetscope.Profile, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := p.command(ctx, "convert")
	cmd.Stdin = r
	var stderr tail
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "plugin %s: %v", p.Name, err)
	}
	var once sync.Once
	wait := func() error {
		var err error
		once.Do(func() { err = cmd.Wait() })
		return err
	}
	fail := func(format string, args ...any) (*fleetscope.Profile, error) {
		msg := fmt.Sprintf(format, args...)
		cancel() // kills the plugin if it still runs
		if werr := wait(); werr != nil && ctx.Err() == nil {
			msg += fmt.Sprintf(" (the plugin: %v)", werr)
		}
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "plugin %s: %s%s", p.Name, msg, stderr.suffix())
	}

	br := bufio.NewReaderSize(stdout, HeadSize)
	head, err := br.Peek(HeadSize)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return fail("reading its output: %v", err)
	}
	if len(head) == 0 {
		if werr := wait(); werr != nil {
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "plugin %s convert failed: %v%s", p.Name, werr, stderr.suffix())
		}
		return fail("wrote nothing")
	}
	// Output neither parser recognises is read as folded, whose error
	// names the first bad line.
	parse, kind := folded.Parse, "folded"
	ps, fs := perf.Detect(head), folded.Detect(head)
	if ps > fs {
		parse, kind = perf.Parse, "perf"
	}
	prof, perr := parse(br, sink)
	if perr != nil {
		cancel()
		wait()
		var fe *fleetscope.Error
		if !errors.As(perr, &fe) {
			return prof, perr
		}
		if ps == 0 && fs == 0 {
			return prof, fleetscope.Errorf(fe.Code, "plugin %s wrote neither perf script text nor folded stacks (read as folded: %s)%s", p.Name, fe.Message, stderr.suffix())
		}
		return prof, fleetscope.Errorf(fe.Code, "plugin %s output (%s): %s%s", p.Name, kind, fe.Message, stderr.suffix())
	}
	io.Copy(io.Discard, br) // whatever the parser left, so the plugin can finish
	if werr := wait(); werr != nil {
		var fe *fleetscope.Error
		if errors.As(werr, &fe) { // reading the input failed, e.g. over a size limit
			return prof, fe
		}
		return prof, fleetscope.Errorf(fleetscope.EINVALID, "plugin %s convert failed: %v%s", p.Name, werr, stderr.suffix())
	}
	prof.Format = p.Name
	prof.Meta["converter"] = p.Path
	prof.Meta["converted_to"] = kind
	return prof, nil
}

// tail keeps the last bytes written to it.
type tail struct{ b []byte }

const tailSize = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*tailSize {
		t.b = append(t.b[:0], t.b[len(t.b)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	if len(t.b) > tailSize {
		return "..." + string(t.b[len(t.b)-tailSize:])
	}
	return string(t.b)
}

// suffix is ": <stderr>" for an error message, or "".
func (t *tail) suffix() string {
	s := strings.TrimSpace(t.String())
	if s == "" {
		return ""
	}
	return "; it said: " + strings.ReplaceAll(s, "\n", " | ")
}
