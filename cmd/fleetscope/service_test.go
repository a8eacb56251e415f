package main

// End-to-end tests of the service: the real binary, a real Postgres, a real
// MinIO (or a directory), driven through the CLI and the Connect API.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/api"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/query/heatmap"
	"github.com/fleetscope/fleetscope/store/blob"
	"github.com/fleetscope/fleetscope/store/blob/miniotest"
	"github.com/fleetscope/fleetscope/store/postgres"
	"github.com/fleetscope/fleetscope/store/postgres/pgtest"
)

var fsBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fleetscope-bin-")
	if err != nil {
		panic(err)
	}
	fsBin = filepath.Join(dir, "fleetscope")
	build := exec.Command("go", "build", "-o", fsBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as make build and the image build it
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// service is a running fleetscope server with its own database and blobs.
type service struct {
	t       testing.TB
	url     string
	key     string
	env     []string // FLEETSCOPE_* for the server and admin commands
	db      *postgres.DB
	blobs   blob.Store
	minio   *miniotest.Server
	tmp     string // the server's TMPDIR (upload spool)
	proc    *exec.Cmd
	exited  chan error
	log     *serverLog
	blobURL string
	dbURL   string
}

type serviceOpts struct {
	s3     bool
	extra  []string // more FLEETSCOPE_* settings
	tenant string
}

// serverLog collects a server's JSON log lines and lets a test wait for
// one: the test waits on what the server says, never on time.
type serverLog struct {
	mu    sync.Mutex
	text  bytes.Buffer
	lines []map[string]any
	added chan struct{} // closed and replaced on every new line
}

func newServerLog() *serverLog { return &serverLog{added: make(chan struct{})} }

func (l *serverLog) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		json.Unmarshal(sc.Bytes(), &m)
		l.mu.Lock()
		l.text.Write(sc.Bytes())
		l.text.WriteByte('\n')
		if m != nil {
			l.lines = append(l.lines, m)
		}
		close(l.added)
		l.added = make(chan struct{})
		l.mu.Unlock()
	}
}

func (l *serverLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text.String()
}

// find returns the first line from the n-th on for which match is true
// (nil if none yet), the index to search on from, and a channel closed when
// a line is added.
func (l *serverLog) find(from int, match func(map[string]any) bool) (map[string]any, int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := from; i < len(l.lines); i++ {
		if match(l.lines[i]) {
			return l.lines[i], i + 1, l.added
		}
	}
	return nil, len(l.lines), l.added
}

// await returns the first line from the n-th on for which match is true,
// waiting for it until timeout (a failure, not a condition) and the index
// to search on from.
func (l *serverLog) await(t testing.TB, from int, timeout time.Duration, match func(map[string]any) bool) (map[string]any, int) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		line, next, added := l.find(from, match)
		if line != nil {
			return line, next
		}
		from = next
		select {
		case <-added:
		case <-deadline:
			t.Fatalf("the server did not log what the test waits for within %v; log:\n%s", timeout, tail(l.String(), 4000))
		}
	}
}

// msg matches log lines by message.
func msg(m string) func(map[string]any) bool {
	return func(line map[string]any) bool { return line["msg"] == m }
}

// serverProc is a running fleetscope server process.
type serverProc struct {
	cmd    *exec.Cmd
	url    string
	log    *serverLog
	exited chan error // receives the process's end once
}

// runServer starts `fleetscope ARGS` (a server) with env added to this
// process's environment. The server binds a free port itself and says
// which in its "serving" log line: no port is picked here and released
// for someone else to take first. It is stopped with SIGTERM at cleanup.
func runServer(t testing.TB, env []string, args ...string) *serverProc {
	t.Helper()
	p := &serverProc{cmd: exec.Command(fsBin, args...), log: newServerLog(), exited: make(chan error, 1)}
	p.cmd.Env = append(append(os.Environ(), env...), "FLEETSCOPE_ADDR=127.0.0.1:0")
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logged := make(chan struct{})
	go func() { p.log.read(stderr); close(logged) }()
	go func() { <-logged; p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.exited:
			p.exited <- err
		case <-time.After(20 * time.Second):
			p.cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("server %v log:\n%s", args, tail(p.log.String(), 4000))
		}
	})
	deadline := time.After(60 * time.Second)
	for from := 0; ; {
		line, next, added := p.log.find(from, msg("serving"))
		if line != nil {
			p.url = "http://" + fmt.Sprint(line["addr"])
			return p
		}
		from = next
		select {
		case err := <-p.exited:
			p.exited <- err
			t.Fatalf("server exited at start: %v\n%s", err, p.log.String())
		case <-added:
		case <-deadline:
			t.Fatalf("the server did not start serving in a minute:\n%s", p.log.String())
		}
	}
}

func startService(t testing.TB, o serviceOpts) *service {
	t.Helper()
	ctx := context.Background()
	s := &service{t: t, tmp: t.TempDir(), log: newServerLog()}
	dbURL := pgtest.NewURL(t)
	s.dbURL = dbURL
	s.blobURL = "file://" + t.TempDir()
	var access, secret string
	if o.s3 {
		s.minio = miniotest.Start(t)
		s.blobURL, access, secret = s.minio.URL("fleetscope"), s.minio.AccessKey, s.minio.SecretKey
	}
	s.env = append([]string{
		"FLEETSCOPE_DATABASE_URL=" + dbURL, "FLEETSCOPE_BLOB_URL=" + s.blobURL,
		"FLEETSCOPE_S3_ACCESS_KEY=" + access, "FLEETSCOPE_S3_SECRET_KEY=" + secret,
		"FLEETSCOPE_LOG_LEVEL=debug",
	}, o.extra...)
	tenant := o.tenant
	if tenant == "" {
		tenant = "acme"
	}
	s.admin("tenant", "create", tenant)
	s.key = strings.TrimSpace(s.admin("key", "create", "--tenant", tenant, "--scope", "ingest,read"))

	srv := runServer(t, append(slices.Clone(s.env), "TMPDIR="+s.tmp), "server")
	s.proc, s.url, s.log, s.exited = srv.cmd, srv.url, srv.log, srv.exited
	var err error
	if s.db, err = postgres.Open(ctx, dbURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.db.Close)
	if s.blobs, err = blob.Open(ctx, s.blobURL, access, secret); err != nil {
		t.Fatal(err)
	}
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// spoolFiles counts the files in the server's upload spool (its TMPDIR),
// but for the spool's lock file (.lock), there while the server runs.
func (s *service) spoolFiles() int {
	n := 0
	filepath.WalkDir(s.tmp, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".lock") {
			n++
		}
		return nil
	})
	return n
}

// flushCaches empties the server's caches (its SIGHUP hook) and waits
// until the server says it has.
func (s *service) flushCaches() {
	s.t.Helper()
	_, from, _ := s.log.find(0, func(map[string]any) bool { return false })
	if err := s.proc.Process.Signal(syscall.SIGHUP); err != nil {
		s.t.Fatal(err)
	}
	s.log.await(s.t, from, 30*time.Second, msg("caches flushed"))
}

// admin runs a bootstrap command against the database.
func (s *service) admin(args ...string) string {
	s.t.Helper()
	out, errOut, code := run1(s.env, args...)
	if code != 0 {
		s.t.Fatalf("fleetscope %v: exit %d: %s", args, code, errOut)
	}
	return out
}

// cli runs a client command against the server with the tenant's key.
func (s *service) cli(args ...string) (string, string, int) {
	return run1(append(s.env, "FLEETSCOPE_URL="+s.url, "FLEETSCOPE_API_KEY="+s.key), args...)
}

func (s *service) mustCLI(args ...string) string {
	s.t.Helper()
	out, errOut, code := s.cli(args...)
	if code != 0 {
		s.t.Fatalf("fleetscope %v: exit %d: %s", args, code, errOut)
	}
	return out
}

func run1(env []string, args ...string) (string, string, int) {
	cmd := exec.Command(fsBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return "", err.Error(), -1
	}
	return out.String(), errOut.String(), code
}

// local runs a command on a local file.
func local(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := run1(nil, args...)
	if code != 0 {
		t.Fatalf("fleetscope %v: exit %d: %s", args, code, errOut)
	}
	return out
}

func (s *service) upload(path string, args ...string) string {
	s.t.Helper()
	out := s.mustCLI(append(append([]string{"upload", "--app", "test"}, args...), path)...)
	f := strings.Fields(out)
	if len(f) != 2 || !strings.HasSuffix(f[1], "/p/"+f[0]) {
		s.t.Fatalf("upload printed %q, want <id> <permalink>", out)
	}
	return f[0]
}

func (s *service) clients() (fleetscopev1connect.IngestServiceClient, fleetscopev1connect.QueryServiceClient) {
	return s.clientsWithKey(s.key)
}

func (s *service) clientsWithKey(key string) (fleetscopev1connect.IngestServiceClient, fleetscopev1connect.QueryServiceClient) {
	opt := connect.WithInterceptors(api.Bearer(key))
	return fleetscopev1connect.NewIngestServiceClient(http.DefaultClient, s.url, opt),
		fleetscopev1connect.NewQueryServiceClient(http.DefaultClient, s.url, opt)
}

// counts returns the rows of the tables an upload writes and the blobs.
func (s *service) counts() string {
	s.t.Helper()
	ctx := context.Background()
	var n []int
	for _, table := range []string{"profiles", "profile_stacks", "seconds", "frames", "stacks"} {
		n = append(n, s.count(table))
	}
	blobs := 0
	if err := s.blobs.List(ctx, "", func(blob.Info) error { blobs++; return nil }); err != nil {
		s.t.Fatal(err)
	}
	return fmt.Sprintf("profiles=%d profile_stacks=%d seconds=%d frames=%d stacks=%d blobs=%d", n[0], n[1], n[2], n[3], n[4], blobs)
}

// count counts a table's rows (as the owner: every tenant).
func (s *service) count(table string) int {
	s.t.Helper()
	var n int
	if err := s.sql(func(c *pgx.Conn) error {
		return c.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n)
	}); err != nil {
		s.t.Fatal(err)
	}
	return n
}

func (s *service) sql(fn func(*pgx.Conn) error) error {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, s.dbURL)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	return fn(c)
}

func plant(t testing.TB, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("python3", append([]string{corpus.Path(t, "tools/planted.py"), dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("planted.py: %v\n%s", err, out)
	}
	return filepath.Join(dir, "planted.perf")
}

func gzipFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	out := filepath.Join(t.TempDir(), filepath.Base(path)+".gz")
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// firstSeconds writes the samples of the first n seconds of a perf file.
func firstSeconds(t *testing.T, path string, n float64) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	start := -1.0
	for _, block := range strings.SplitAfter(string(b), "\n\n") {
		head := block
		for strings.HasPrefix(head, "#") {
			_, head, _ = strings.Cut(head, "\n")
		}
		fields := strings.Fields(strings.SplitN(head, "\n", 2)[0])
		ts := -1.0
		for _, f := range fields {
			if strings.HasSuffix(f, ":") && strings.Contains(f, ".") {
				fmt.Sscanf(strings.TrimSuffix(f, ":"), "%f", &ts)
				break
			}
		}
		if ts < 0 {
			out.WriteString(block)
			continue
		}
		if start < 0 {
			start = float64(int64(ts))
		}
		if ts-start >= n {
			break
		}
		out.WriteString(block)
	}
	p := filepath.Join(t.TempDir(), "first.perf")
	os.WriteFile(p, []byte(out.String()), 0o644)
	return p
}

// exportSource is what an export's title says of its source: the stored
// profile's app, host and id, or the local file's host and name.
var exportSource = regexp.MustCompile(`(app [^,"<]*, )?(host [^,"<]*, )?(profile|file) [^,"<]*, `)

// TestServiceAnswersEqualLocalFiles uploads profiles to a server backed by
// Postgres and MinIO and checks that every query answers exactly what the
// local-file command answers, and that every cell's range flame graph
// totals the cell.
func TestServiceAnswersEqualLocalFiles(t *testing.T) {
	s := startService(t, serviceOpts{s3: true})
	planted := plant(t, "--seed", "21", "--seconds", "20", "--epoch")
	bench5 := firstSeconds(t, corpus.Path(t, "bench/perf-mixed-60s.txt.gz"), 5)
	files := map[string]string{
		"planted":     planted,
		"planted.gz":  gzipFile(t, planted),
		"bench-5s":    bench5,
		"bench-5s.gz": gzipFile(t, bench5),
	}
	for name, path := range files {
		t.Run(name, func(t *testing.T) {
			id := s.upload(path, "--label", "case="+name)
			for _, args := range [][]string{
				{"heatmap", "--json"},
				{"heatmap", "--json", "--rows", "7"},
				{"heatmap", "--json", "--include-idle", "--rows", "100"},
				{"heatmap"},
				{"flamegraph"},
				{"flamegraph", "--include-idle", "--period"},
				{"flamegraph", "--start", "2.4", "--end", "2.48"},
				{"flamegraph", "--start", "0.000001", "--end", "3.999999", "--format", "json"},
				{"flamegraph", "--start", "-5", "--end", "1.5", "--kernel", "--jit"},
				{"heatmap", "--json", "--function", "GC|java"},
				{"heatmap", "--json", "--cpu", "1", "--cpu", "3", "--rows", "7"},
				{"heatmap", "--by", "thread", "--json"},
				{"heatmap", "--by", "cpu", "--json", "--exclude-function", "^java$", "--top", "3"},
				{"heatmap", "--by", "process"},
				{"flamegraph", "--function", "java", "--exclude-function", "GC", "--cpu", "0"},
				{"flamegraph", "--start", "1", "--end", "3", "--format", "svg"},
				{"flamegraph", "--format", "pprof", "--period"},
				{"flamegraph", "--format", "speedscope", "--function", "a"},
			} {
				want := local(t, append(args, path)...)
				got := s.mustCLI(append(args, "--profile", id)...)
				// Export titles name the stored profile, or the file.
				got, want = exportSource.ReplaceAllString(got, ""), exportSource.ReplaceAllString(want, "")
				if got != want {
					t.Fatalf("%v: server answer differs from the local file's:\n got %.500q\nwant %.500q", args, got, want)
				}
			}
			// Every non-empty cell's flame graph totals the cell (rows 50).
			var h heatmap.Heatmap
			if err := json.Unmarshal([]byte(local(t, "heatmap", "--json", path)), &h); err != nil {
				t.Fatal(err)
			}
			_, q := s.clients()
			cells := 0
			for i, col := range h.Columns {
				for r, n := range col {
					if n == 0 {
						continue
					}
					rg := cellRange(i, r, h.Rows)
					res, err := q.GetFlameGraph(context.Background(), connect.NewRequest(&fsv1.GetFlameGraphRequest{
						ProfileId: id, StartNanos: &rg.Start, EndNanos: &rg.End, Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED}))
					if err != nil {
						t.Fatal(err)
					}
					if res.Msg.GetTotal() != uint64(n) {
						t.Fatalf("cell col %d row %d: count %d, its flame graph totals %d", i, r, n, res.Msg.GetTotal())
					}
					cells++
				}
			}
			t.Logf("%s: %d non-empty cells, each equal to its flame graph total", name, cells)
		})
	}
	// Search by app, label and time.
	out := s.mustCLI("profiles", "--app", "test", "--label", "case=planted", "--json")
	var found []map[string]any
	if err := json.Unmarshal([]byte(out), &found); err != nil || len(found) != 1 {
		t.Fatalf("profiles --label case=planted: %v %s", err, out)
	}
	if found[0]["timeSource"] != "realtime" || !strings.HasPrefix(found[0]["startTime"].(string), "2026-11-18") {
		t.Fatalf("an epoch-clock profile should be placed at its own time: %v", found[0])
	}
	out = s.mustCLI("profiles", "--since", "2026-11-18", "--until", "2026-11-19", "--json")
	if err := json.Unmarshal([]byte(out), &found); err != nil || len(found) != 2 {
		t.Fatalf("profiles in 2026-11-18: want the 2 planted uploads, got %s", out)
	}
}

// TestUploadIsIdempotent: the same bytes twice are one profile, one blob.
func TestUploadIsIdempotent(t *testing.T) {
	s := startService(t, serviceOpts{})
	path := plant(t, "--seed", "3", "--seconds", "4")
	a := s.upload(path)
	before := s.counts()
	b := s.upload(path)
	if a != b {
		t.Fatalf("second upload of the same bytes made profile %s, want %s", b, a)
	}
	if after := s.counts(); after != before || !strings.Contains(after, "profiles=1 ") || !strings.HasSuffix(after, "blobs=1") {
		t.Fatalf("after re-upload: %s (before: %s)", after, before)
	}
}

// TestConcurrentIdenticalUploadsAreOneProfile: the same bytes uploaded by 8
// clients at once (all in flight together: each is held at the server until
// all 8 have begun) are one profile, one blob, and every client is told its
// id.
func TestConcurrentIdenticalUploadsAreOneProfile(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	planted := plant(t, "--seed", "33", "--seconds", "4")
	body, err := os.ReadFile(planted)
	if err != nil {
		t.Fatal(err)
	}
	ing, _ := s.clients()
	const n = 8
	streams := make([]*connect.ClientStreamForClient[fsv1.UploadRequest, fsv1.UploadResponse], n)
	for i := range streams { // every upload begun, with all but its last bytes sent
		streams[i] = ing.Upload(ctx)
		streams[i].Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Metadata{Metadata: &fsv1.UploadMetadata{App: "same", Filename: "same.perf"}}})
		streams[i].Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Chunk{Chunk: body[:len(body)-1]}})
	}
	waitUntil(t, "all 8 uploads to be spooled at the server", func() bool { return s.spoolFiles() >= n })
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i, st := range streams { // then all finished at once
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Chunk{Chunk: body[len(body)-1:]}})
			res, err := st.CloseAndReceive()
			if err != nil {
				t.Errorf("upload %d: %v", i, err)
				return
			}
			ids[i] = res.Msg.GetProfile().GetId()
		}()
	}
	wg.Wait()
	for i, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("concurrent identical uploads were told different profiles: %v (upload %d)", ids, i)
		}
	}
	if got := s.counts(); !strings.Contains(got, "profiles=1 ") || !strings.HasSuffix(got, "blobs=1") {
		t.Fatalf("8 identical uploads at once stored %s, want one profile and one blob", got)
	}
	_, q := s.clients()
	hm, err := q.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: ids[0]}))
	if err != nil || hm.Msg.GetTotal() != truthNonIdle(t, planted) {
		t.Fatalf("the one profile's heatmap: %v total %d, truth.json %d", err, hm.Msg.GetTotal(), truthNonIdle(t, planted))
	}
}

// TestBadInputStoresNothing: each bad upload gets a clear error and leaves
// no index rows and no blob.
func TestBadInputStoresNothing(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_MAX_RAW_BYTES=67108864"}})
	dir := t.TempDir()
	good := plant(t, "--seed", "4", "--seconds", "3")
	gz := gzipFile(t, good)
	gzb, _ := os.ReadFile(gz)
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zw.Write([]byte("a 1 [000] 1.000000: cpu-clock: \n\tff f (m)\n\n"))
	zero := bytes.Repeat([]byte("\n"), 1<<20) // blank lines: parse on, until the limit
	for range 100 {
		zw.Write(zero)
	}
	zw.Close()
	cases := []struct {
		name, content, want string
	}{
		{"not-a-profile.txt", "hello, world\nthis is not a profile\n", "unrecognised input"},
		{"empty.txt", "", "empty input"},
		{"truncated.gz", string(gzb[:len(gzb)/2]), "truncated gzip: the compressed input ends early"},
		{"perf.data", "PERFILE2\x68\x00\x00\x00\x00\x00\x00\x00" + strings.Repeat("\x00", 200), "a perf.data file: fleetscope reads its text; run `perf script --header -i perf.data"},
		{"long-line.txt", strings.Repeat("x", 10<<20) + "\n", "unrecognised input"},
		{"perf-then-garbage.txt", "x 1 [000] 1.000000: cpu-clock: \n\tff f (m)\n\n" + strings.Repeat("y", 10<<20) + "\n", "line 4 is longer than 1024 KiB"},
		{"bomb.gz", bomb.String(), "larger than the limit"},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		os.WriteFile(p, []byte(c.content), 0o644)
		out, errOut, code := s.cli("upload", "--app", "bad", p)
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and one line containing %q", c.name, code, out, errOut, c.want)
		}
	}
	if got := s.counts(); got != "profiles=0 profile_stacks=0 seconds=0 frames=0 stacks=0 blobs=0" {
		t.Fatalf("bad uploads left: %s", got)
	}
	if n := s.spoolFiles(); n != 0 {
		t.Fatalf("upload spool not cleaned: %d files", n)
	}
	s.upload(gz) // and the service still works
}

// TestFailuresLeaveNothingHalfWritten injects failures: the blob store down,
// database connections killed, a client that disconnects mid-stream. Each
// failed upload leaves nothing visible; a retry succeeds and stores the
// profile whole (every heatmap cell its planted truth); no orphans.
func TestFailuresLeaveNothingHalfWritten(t *testing.T) {
	s := startService(t, serviceOpts{s3: true})
	ctx := context.Background()
	path := plant(t, "--seed", "5", "--seconds", "6")

	// MinIO down.
	s.minio.Stop()
	_, errOut, code := s.cli("upload", "--app", "x", path)
	if code != 1 || !strings.Contains(errOut, "could not store the raw file") {
		t.Fatalf("upload with MinIO down: exit %d, %q", code, errOut)
	}
	s.minio.Restart()
	if got := s.counts(); got != "profiles=0 profile_stacks=0 seconds=0 frames=0 stacks=0 blobs=0" {
		t.Fatalf("after a failed blob write: %s", got)
	}
	// Once MinIO is back the upload is stored whole.
	_, q := s.clients()
	s.checkCells(t, q, s.upload(path), path, "after MinIO's restart")

	// Database connections killed while uploads run: distinct files are
	// uploaded, with every client session killed each 40 ms, until the kills
	// have hit uploads in flight: an upload failed, or the server had to run
	// a statement again on a fresh connection (its retry counter, on
	// /metrics). An injection that hit nothing tests nothing.
	var paths []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var killed atomic.Int64
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(40 * time.Millisecond):
				s.sql(func(c *pgx.Conn) error {
					// Sessions, not the database's background workers (on
					// Citus its maintenance daemon, which recovers the
					// prepared transactions a killed session leaves).
					var n int64
					err := c.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
						WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&n)
					killed.Add(n)
					return err
				})
			}
		}
	}()
	failed, retried0 := 0, s.metric("fleetscope_db_retries_total")
	for i := 0; i < 6 || failed == 0 && s.metric("fleetscope_db_retries_total") == retried0; i++ {
		if i == 40 {
			t.Fatalf("40 uploads while connections were killed (%d killed): none failed or was retried, so nothing was tested", killed.Load())
		}
		p := plant(t, "--seed", fmt.Sprint(100+i), "--seconds", "8", "--hz", "199")
		paths = append(paths, p)
		if _, _, code := s.cli("upload", "--app", "x", p); code != 0 {
			failed++
		}
	}
	close(stop)
	wg.Wait()
	if killed.Load() == 0 {
		t.Fatal("no database connection was killed: nothing was tested")
	}
	t.Logf("killed %d connections; %d of %d uploads failed, %v database operations retried", killed.Load(), failed, len(paths),
		s.metric("fleetscope_db_retries_total")-retried0)
	for _, p := range paths { // retries succeed, and store each profile in full
		s.checkCells(t, q, s.upload(p), p, filepath.Base(filepath.Dir(p))+" after a retry (half-written and taken as already stored?)")
	}

	// A client that goes away mid-stream, once the server is reading its
	// upload (its spool holds the body): the server drops it.
	ing, _ := s.clients()
	cctx, cancel := context.WithCancel(ctx)
	stream := ing.Upload(cctx)
	stream.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Metadata{Metadata: &fsv1.UploadMetadata{App: "gone"}}})
	b, _ := os.ReadFile(plant(t, "--seed", "9", "--seconds", "10"))
	stream.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Chunk{Chunk: b[:len(b)/2]}})
	waitUntil(t, "the server to spool the half-sent upload", func() bool { return s.spoolFiles() > 0 })
	cancel()
	stream.CloseAndReceive()
	waitUntil(t, "the server to drop the abandoned upload's spool file", func() bool { return s.spoolFiles() == 0 })

	// Consistency: every profile complete, every blob referenced, nothing else.
	check, err := s.db.CheckConsistency(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(check) != 0 {
		t.Fatalf("inconsistent index: %v", check)
	}
	var keys []string
	s.blobs.List(ctx, "", func(i blob.Info) error { keys = append(keys, i.Key); return nil })
	if n := s.count("profiles"); n != len(keys) || n != 1+len(paths) {
		t.Fatalf("%d profiles, %d blobs (%v), want %d each", n, len(keys), keys, 1+len(paths))
	}
	for _, k := range keys {
		if used, _ := s.db.BlobInUse(ctx, k); !used {
			t.Errorf("orphan blob %s", k)
		}
	}
}

// metric reads a counter or gauge from the server's /metrics (0 if absent).
func (s *service) metric(name string) float64 {
	s.t.Helper()
	res, err := http.Get(s.url + "/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				s.t.Fatalf("/metrics %s: %v", name, err)
			}
			return f
		}
	}
	return 0
}

// checkCells fails the test unless profile id's heatmap has exactly the
// cells the local command counts in the planted file, and its planted
// total (truth.json): the same samples in the same cells, not only the
// same total. (truth.json's own cells are not the reference: planted.py
// places a sample on a row boundary by float arithmetic, a row low.)
func (s *service) checkCells(t *testing.T, q fleetscopev1connect.QueryServiceClient, id, planted, when string) {
	t.Helper()
	var want heatmapJSON
	if err := json.Unmarshal([]byte(local(t, "heatmap", "--json", planted)), &want); err != nil {
		t.Fatal(err)
	}
	hm, err := q.GetHeatmap(context.Background(), connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id, Rows: int32(want.Rows)}))
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	m := hm.Msg
	if m.GetStartSecond() != want.StartSecond || m.GetSecondsPerColumn() != want.SecondsPerColumn || int(m.GetRows()) != want.Rows || len(m.GetColumns()) != len(want.Columns) {
		t.Fatalf("%s: heatmap from second %d, %d s a column, %d rows, %d columns; the file's from %d, %d s, %d rows, %d columns", when,
			m.GetStartSecond(), m.GetSecondsPerColumn(), m.GetRows(), len(m.GetColumns()), want.StartSecond, want.SecondsPerColumn, want.Rows, len(want.Columns))
	}
	bad, cells := 0, 0
	for c, col := range m.GetColumns() {
		if !slices.Equal(col.GetCounts(), want.Columns[c]) {
			for r := range max(len(col.GetCounts()), len(want.Columns[c])) {
				if r >= len(col.GetCounts()) || r >= len(want.Columns[c]) || col.GetCounts()[r] != want.Columns[c][r] {
					bad++
				}
			}
		}
		cells += len(col.GetCounts())
	}
	if truth := truthNonIdle(t, planted); bad != 0 || m.GetTotal() != truth || want.Total != truth {
		t.Errorf("%s: %d of %d heatmap cells differ from the file's; total %d, the file's %d, truth.json %d", when, bad, cells, m.GetTotal(), want.Total, truth)
	}
}

// truthNonIdle is the non-idle sample count planted.py wrote beside a
// planted profile (its truth.json).
func truthNonIdle(t testing.TB, planted string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(planted), "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		NonIdle *int64 `json:"non_idle"`
	}
	if err := json.Unmarshal(b, &tr); err != nil || tr.NonIdle == nil {
		t.Fatalf("truth.json of %s: no non_idle (%v)", planted, err)
	}
	return *tr.NonIdle
}

// waitUntil polls the server's state (not the clock) until cond holds,
// failing t after 30 s.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGracefulShutdownFinishesUploads: SIGTERM during an upload lets it
// finish, then the server exits cleanly. The signal comes once the server
// is reading the upload (its spool holds the first parts), and the rest is
// sent once the server says it is shutting down.
func TestGracefulShutdownFinishesUploads(t *testing.T) {
	s := startService(t, serviceOpts{})
	b, _ := os.ReadFile(plant(t, "--seed", "6", "--seconds", "10"))
	ing, _ := s.clients()
	stream := ing.Upload(context.Background())
	stream.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Metadata{Metadata: &fsv1.UploadMetadata{App: "slow"}}})
	const parts = 10
	for i := range parts {
		if i == 2 {
			waitUntil(t, "the server to spool the upload's first parts", func() bool { return s.spoolFiles() > 0 })
			_, from, _ := s.log.find(0, func(map[string]any) bool { return false })
			s.proc.Process.Signal(syscall.SIGTERM)
			s.log.await(t, from, 30*time.Second, msg("shutting down: finishing in-flight requests"))
		}
		chunk := b[i*len(b)/parts : (i+1)*len(b)/parts]
		if err := stream.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Chunk{Chunk: chunk}}); err != nil {
			t.Fatalf("send after SIGTERM: %v", err)
		}
	}
	res, err := stream.CloseAndReceive()
	if err != nil {
		t.Fatalf("upload in flight at SIGTERM failed: %v", err)
	}
	if res.Msg.GetProfile().GetSamples() == 0 {
		t.Fatal("no samples stored")
	}
	select {
	case err := <-s.exited:
		if err != nil {
			t.Fatalf("server exit: %v", err)
		}
		s.exited <- nil
	case <-time.After(20 * time.Second):
		t.Fatal("server did not exit after SIGTERM")
	}
}

// TestAuthAndTenantScope: keys are required, scopes enforced, and another
// tenant's profiles are simply not found. (The full isolation suite is the
// tenancy issue's.)
func TestAuthAndTenantScope(t *testing.T) {
	s := startService(t, serviceOpts{})
	id := s.upload(plant(t, "--seed", "8", "--seconds", "3"))
	s.admin("tenant", "create", "other")
	otherKey := strings.TrimSpace(s.admin("key", "create", "--tenant", "other", "--scope", "read"))
	ctx := context.Background()

	_, q := s.clientsWithKey("")
	if _, err := q.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("no key: %v", err)
	}
	_, q = s.clientsWithKey("fsk_wrong")
	if _, err := q.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("bad key: %v", err)
	}
	ing, q := s.clientsWithKey(otherKey)
	if _, err := q.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("other tenant's profile: %v", err)
	}
	if _, err := q.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("other tenant's heatmap: %v", err)
	}
	if _, err := q.GetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("other tenant's flame graph: %v", err)
	}
	if res, err := q.SearchProfiles(ctx, connect.NewRequest(&fsv1.SearchProfilesRequest{})); err != nil || len(res.Msg.GetProfiles()) != 0 {
		t.Errorf("other tenant's search: %v", err)
	}
	if _, err := ing.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Metadata: &fsv1.UploadMetadata{App: "x"}, Data: []byte("x")})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("upload with a read-only key: %v", err)
	}
	out, errOut, code := run1([]string{"FLEETSCOPE_URL=" + s.url, "FLEETSCOPE_API_KEY=" + otherKey}, "heatmap", "--json", "--profile", id)
	if code != 1 || out != "" || !strings.Contains(errOut, "not found") {
		t.Errorf("CLI heatmap of another tenant's profile: exit %d %q %q", code, out, errOut)
	}
	// A wrong key, or none, and the CLI says where keys come from.
	const hint = "keys come from fleetscope key create --tenant NAME --scope ingest,read (on the database), fleetscope admin create-key (an admin key), or .data/api-key after make run"
	for key, wantCode := range map[string]int{"fsk_wrong": 1, "": 2} {
		out, errOut, code := run1([]string{"FLEETSCOPE_URL=" + s.url, "FLEETSCOPE_API_KEY=" + key}, "profiles")
		if code != wantCode || out != "" || !strings.Contains(errOut, hint) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("CLI with key %q: exit %d %q %q; want exit %d and one line saying %q", key, code, out, errOut, wantCode, hint)
		}
	}
}

// cellRange is the half-open range of relative time, in ns, that heatmap
// cell (col, row) covers: the offsets fleetscope.Row puts in row, within
// second col (the domain package's geometry).
func cellRange(col, row, rows int) fleetscope.Range {
	lo := (int64(row)*1e9 + int64(rows) - 1) / int64(rows)
	hi := (int64(row+1)*1e9 + int64(rows) - 1) / int64(rows)
	base := int64(col) * 1e9
	return fleetscope.Range{Start: base + lo, End: base + hi}
}
